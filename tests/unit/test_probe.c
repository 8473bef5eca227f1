// SPDX-License-Identifier: GPL-2.0-only
/*
 * The probe's table held to the objects it describes, the CO-RE references
 * read off them, and the report of a refused program.  No privileges: the
 * objects are opened, never loaded.
 */
#include <bpf/libbpf.h>
#include <criterion/criterion.h>
#include <dirent.h>
#include <linux/bpf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core_fields.h"
#include "feature.h"
#include "load_log.h"
#include "objects.h"
#include "probe.h"

struct object_view {
	const struct lism_object *o;
	int n;
	char section[16][64];
	enum bpf_prog_type type[16];
	int feature[16];
};

static void view(const struct lism_object *o, struct object_view *v)
{
	struct bpf_object *obj = lism_object_open(o, NULL);
	struct bpf_program *p;

	memset(v, 0, sizeof(*v));
	v->o = o;
	cr_assert_not_null(obj, "%s", o->name);
	bpf_object__for_each_program(p, obj) {
		snprintf(v->section[v->n], sizeof(v->section[0]), "%s", bpf_program__section_name(p));
		v->type[v->n] = bpf_program__type(p);
		v->feature[v->n] = lism_feature_of_program(bpf_program__name(p));
		v->n++;
	}
	bpf_object__close(obj);
}

static int listed(__u32 type, __u32 helper, int feature)
{
	for (size_t i = 0; i < lism_n_helper_reqs; i++)
		if (lism_helper_reqs[i].prog_type == type && lism_helper_reqs[i].helper == helper &&
		    (int)lism_helper_reqs[i].feature == feature)
			return 1;
	return 0;
}

struct calls_ctx {
	struct object_view *v;
	int missing;
	char first[256];
	/* for the reverse check: helpers seen, per program type */
	unsigned char seen[64][256];
};

static void on_call(const char *section, unsigned int helper, void *arg)
{
	struct calls_ctx *c = arg;
	int ok = 0, text = !strcmp(section, ".text");

	for (int i = 0; i < c->v->n; i++) {
		if (!text && strcmp(section, c->v->section[i]))
			continue;
		if (helper < 256 && c->v->type[i] < 64)
			c->seen[c->v->type[i]][helper] = 1;
		/* a subprogram's call is listed for one of the programs that may call it */
		ok |= listed(c->v->type[i], helper, c->v->feature[i]);
	}
	if (!ok && !c->missing++)
		snprintf(c->first, sizeof(c->first), "helper #%u in section %s of object %s", helper, section,
			 c->v->o->name);
}

Test(probe, every_helper_an_object_calls_is_in_the_table_and_no_row_is_stale)
{
	for (size_t i = 0; i < lism_n_objects; i++) {
		struct calls_ctx *c = calloc(1, sizeof(*c));
		struct object_view v;
		size_t size;
		const void *elf = lism_objects[i].elf(&size);

		view(&lism_objects[i], &v);
		c->v = &v;
		cr_assert_eq(lism_elf_helper_calls(elf, size, on_call, c), 0);
		cr_assert_eq(c->missing, 0, "%d helpers missing from probe.c's table, first: %s", c->missing,
			     c->first);
		for (size_t r = 0; r < lism_n_helper_reqs; r++) {
			const struct lism_helper_req *h = &lism_helper_reqs[r];
			int mine = 0;

			for (int p = 0; p < v.n; p++)
				mine |= v.feature[p] == (int)h->feature && v.type[p] == (enum bpf_prog_type)h->prog_type;
			if (mine)
				cr_assert(c->seen[h->prog_type][h->helper], "stale row: %s for %s in object %s",
					  h->name, lism_feature_info(h->feature)->name, lism_objects[i].name);
		}
		free(c);
	}
}

static int has_ref(const struct lism_core_ref *refs, size_t n, const char *want, int checked)
{
	char buf[200];

	for (size_t i = 0; i < n; i++) {
		lism_core_ref_format(&refs[i], buf, sizeof(buf));
		if (!strcmp(buf, want))
			return refs[i].checked == checked;
	}
	return 0;
}

Test(probe, the_core_fields_are_read_off_the_objects)
{
	const struct lism_object *views = lism_object_find("views"), *core = lism_object_find("core"),
				 *data_path = lism_object_find("shortcut");
	struct lism_core_ref *refs;
	size_t n, size;
	const void *elf;

	elf = views->elf(&size);
	cr_assert_eq(lism_core_refs(elf, size, &refs, &n), 0);
	cr_assert(has_ref(refs, n, "sock.sk_bpf_storage", 0));
	cr_assert(has_ref(refs, n, "bpf_local_storage_map.map.id", 0));
	cr_assert(has_ref(refs, n, "sk_psock.msg_tot_len", 1), "the iterator reads it only where it exists");
	free(refs);
	elf = data_path->elf(&size);
	cr_assert_eq(lism_core_refs(elf, size, &refs, &n), 0);
	cr_assert(has_ref(refs, n, "sk_psock.msg_tot_len", 0), "the data path needs the FIONREAD fix");
	cr_assert(has_ref(refs, n, "type tcp_sock", 0));
	free(refs);
	elf = core->elf(&size);
	cr_assert_eq(lism_core_refs(elf, size, &refs, &n), 0);
	cr_assert(has_ref(refs, n, "sk_psock.msg_tot_len", 1), "the handshake runs where the data path cannot");
	/* the handshake reads socket storage (nested instances) only where the kernel lays it out so */
	cr_assert(has_ref(refs, n, "type bpf_local_storage", 1));
	cr_assert(has_ref(refs, n, "bpf_local_storage_map.map.name", 1));
	free(refs);
	cr_assert_neq(lism_core_refs("not an ELF", 10, &refs, &n), 0);
}

/* The log of the issue that made this file: a 6.18 build refusing the old conns iterator. */
static const char issue_log[] =
	"libbpf: prog 'lism_iter_socks': BPF program load failed: Permission denied\n"
	"libbpf: prog 'lism_iter_socks': -- BEGIN PROG LOAD LOG --\n"
	"reg type unsupported for arg#0 function lism_iter_socks#9\n"
	"0: R1=ctx() R10=fp0\n"
	"; sk = so->sk; @ views.bpf.c:40\n"
	"7: (79) r7 = *(u64 *)(r0 +24)   ; R0=ptr_socket() R7=untrusted_ptr_sock()\n"
	"; st = bpf_sk_storage_get(&socks, sk, 0, 0); @ views.bpf.c:43\n"
	"15: (85) call bpf_sk_storage_get#107\n"
	"R2 type=untrusted_ptr_ expected=ptr_, trusted_ptr_, rcu_ptr_\n"
	"processed 15 insns (limit 1000000) max_states_per_insn 0 total_states 1 peak_states 1 mark_read 1\n"
	"-- END PROG LOAD LOG --\n"
	"libbpf: prog 'lism_iter_socks': failed to load: -13\n"
	"libbpf: failed to load object 'lism_bpf'\n"
	"libbpf: failed to load BPF skeleton 'lism_bpf': -13\n";

Test(load_log, a_refusal_is_its_program_and_the_verifiers_last_two_lines)
{
	struct lism_refusal r;
	char line[512];

	lism_refusal_parse(issue_log, &r);
	cr_assert_str_eq(r.prog, "lism_iter_socks");
	cr_assert(r.verifier);
	cr_assert_eq(r.n, 2);
	cr_assert_str_eq(r.line[0], "15: (85) call bpf_sk_storage_get#107");
	cr_assert_str_eq(r.line[1], "R2 type=untrusted_ptr_ expected=ptr_, trusted_ptr_, rcu_ptr_");
	lism_refusal_summary(&r, line, sizeof(line));
	cr_assert_str_eq(line, "the verifier refused lism_iter_socks: R2 type=untrusted_ptr_ expected=ptr_, "
			       "trusted_ptr_, rcu_ptr_");
}

Test(load_log, a_failure_before_the_verifier_is_said_in_libbpfs_words)
{
	static const char text[] =
		"libbpf: prog 'lism_msg': relo #3: kind <byte_off> (0), spec is [12] struct sk_psock.msg_tot_len\n"
		"libbpf: prog 'lism_msg': relo #3: no matching targets found\n"
		"libbpf: failed to load object 'lism_bpf'\n"
		"libbpf: failed to load BPF skeleton 'lism_bpf': -22\n";
	struct lism_refusal r;

	lism_refusal_parse(text, &r);
	cr_assert_str_eq(r.prog, "lism_msg");
	cr_assert_not(r.verifier);
	cr_assert_eq(r.n, 2);
	cr_assert_str_eq(r.line[1], "prog 'lism_msg': relo #3: no matching targets found");
}

Test(load_log, nothing_said_is_nothing_parsed)
{
	struct lism_refusal r;

	lism_refusal_parse("", &r);
	cr_assert_eq(r.n, 0);
	cr_assert_str_empty(r.prog);
	lism_refusal_parse(NULL, &r);
	cr_assert_eq(r.n, 0);
	/* a log line longer than the report's line is cut, not overflowed */
	char big[2048];
	size_t at;

	at = (size_t)snprintf(big, sizeof(big), "libbpf: prog 'x': -- BEGIN PROG LOAD LOG --\n");
	memset(big + at, 'y', 1000);
	at += 1000;
	snprintf(big + at, sizeof(big) - at, "\n-- END PROG LOAD LOG --\n");
	lism_refusal_parse(big, &r);
	cr_assert_eq(r.n, 1);
	cr_assert_eq(strlen(r.line[0]), LISM_REFUSAL_LINE - 1);
}

/* Entries of @dir besides . and .. */
static int sh_count(const char *dir)
{
	struct dirent *de;
	int n = 0;
	DIR *d = opendir(dir);

	cr_assert_not_null(d);
	while ((de = readdir(d)))
		n += strcmp(de->d_name, ".") && strcmp(de->d_name, "..");
	closedir(d);
	return n;
}

Test(load_log, the_whole_log_is_saved_under_tmpdir)
{
	char dir[] = "/tmp/lism-unit-XXXXXX", path[4096], buf[64] = "";
	FILE *f;

	char want[4096], link[4096];

	cr_assert_not_null(mkdtemp(dir));
	setenv("TMPDIR", dir, 1);
	snprintf(want, sizeof(want), "%s/lism-load-lism_iter_socks.log", dir);
	/* a symlink planted at the name is replaced, not written through */
	snprintf(link, sizeof(link), "%s/target", dir);
	cr_assert_eq(symlink(link, want), 0);
	cr_assert_eq(lism_load_log_save(issue_log, "lism_iter_socks", path, sizeof(path)), 0);
	cr_assert_str_eq(path, want);
	cr_assert_neq(access(link, F_OK), 0, "the log was written through a symlink");
	f = fopen(path, "r");
	cr_assert_not_null(f);
	cr_assert_not_null(fgets(buf, sizeof(buf), f));
	fclose(f);
	cr_assert_eq(strncmp(buf, "libbpf: prog 'lism_iter_socks'", 30), 0);
	/* the next refusal of the same program replaces it: logs do not pile up */
	cr_assert_eq(lism_load_log_save("second\n", "lism_iter_socks", path, sizeof(path)), 0);
	cr_assert_eq(sh_count(dir), 1);
	cr_assert_neq(lism_load_log_save("x", "../escape", path, sizeof(path)), 0);
	cr_assert_str_empty(path);
	unlink(want);
	rmdir(dir);
	setenv("TMPDIR", "/nonexistent-lism-dir", 1);
	cr_assert_neq(lism_load_log_save(issue_log, "lism_iter_socks", path, sizeof(path)), 0);
	cr_assert_str_empty(path);
	unsetenv("TMPDIR");
}

static const struct lism_kreq *find_req(const struct lism_probe *p, const char *name, int checked)
{
	for (size_t i = 0; i < p->n; i++)
		if (!strcmp(p->req[i].name, name) && p->req[i].checked == checked)
			return &p->req[i];
	return NULL;
}

/*
 * What the probe asks for.  Unprivileged it reads only the kernel's BTF
 * (world-readable); as root libbpf's probes also load tiny programs, never
 * attached.
 */
Test(probe, requirements_say_who_needs_them_and_what_is_optional)
{
	struct lism_probe p;
	const struct lism_kreq *r;

	cr_assert_eq(lism_probe_run(&p), 0);
	for (size_t i = 0; i < p.n; i++)
		cr_assert_neq(p.req[i].features, 0, "%s is needed by no feature", p.req[i].name);
	/* the data path reads the FIONREAD fix's field outright; the handshake and the iterator only where it exists */
	r = find_req(&p, "sk_psock.msg_tot_len", 0);
	cr_assert_not_null(r);
	cr_assert_eq(r->features, 1u << LISM_F_DATA_PATH);
	r = find_req(&p, "sk_psock.msg_tot_len", 1);
	cr_assert_not_null(r);
	cr_assert_eq(r->features, (1u << LISM_F_HANDSHAKE) | (1u << LISM_F_CONNS));
	/* read only under a parent the code checks first: optional like the parent */
	cr_assert_not_null(find_req(&p, "mem_cgroup.tcpmem.usage.counter", 1));
	cr_assert_null(find_req(&p, "mem_cgroup.tcpmem.usage.counter", 0));
	cr_assert_not_null(find_req(&p, "attach type cgroup_sock_ops", 0));
	cr_assert_not_null(find_req(&p, "kfunc bpf_rdonly_cast", 0));
	cr_assert_not_null(find_req(&p, "tracepoint tcp_destroy_sock (BTF-typed)", 0));
	lism_probe_free(&p);
}
