// SPDX-License-Identifier: GPL-2.0-only
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "load_log.h"
#include "log.h"

int lism_load_log_begin(struct lism_load_log *l)
{
	memset(l, 0, sizeof(*l));
	l->f = open_memstream(&l->text, &l->len);
	if (!l->f)
		return -errno;
	lism_log_capture(l->f);
	return 0;
}

void lism_load_log_end(struct lism_load_log *l)
{
	if (!l->f)
		return;
	lism_log_capture(NULL);
	fclose(l->f);
	l->f = NULL;
}

void lism_load_log_free(struct lism_load_log *l)
{
	lism_load_log_end(l);
	free(l->text);
	l->text = NULL;
	l->len = 0;
}

/* Lines of a verifier log that summarise rather than say what was refused. */
static int summary_line(const char *s, size_t n)
{
	static const char *const prefixes[] = { "processed ", "verification time ", "stack depth ",
						"-- END PROG LOAD LOG --" };

	if (!n)
		return 1;
	for (size_t i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++)
		if (n >= strlen(prefixes[i]) && !strncmp(s, prefixes[i], strlen(prefixes[i])))
			return 1;
	return 0;
}

/* Keep the last two meaningful lines of [@start, @end) in @r. */
static void last_two(const char *start, const char *end, struct lism_refusal *r)
{
	const char *p = end;

	r->n = 0;
	while (p > start && r->n < 2) {
		const char *eol = p, *bol;
		size_t n;

		while (eol > start && (eol[-1] == '\n' || eol[-1] == '\r'))
			eol--;
		bol = eol;
		while (bol > start && bol[-1] != '\n')
			bol--;
		p = bol;
		n = (size_t)(eol - bol);
		if (!strncmp(bol, "libbpf: ", 8) && n >= 8) {
			bol += 8;
			n -= 8;
		}
		if (summary_line(bol, n))
			continue;
		if (n >= LISM_REFUSAL_LINE)
			n = LISM_REFUSAL_LINE - 1;
		/* found newest first: shift the one found before to the second place */
		if (r->n == 1)
			memcpy(r->line[1], r->line[0], sizeof(r->line[0]));
		memcpy(r->line[0], bol, n);
		r->line[0][n] = '\0';
		r->n++;
	}
}

void lism_refusal_parse(const char *text, struct lism_refusal *r)
{
	static const char begin_mark[] = "-- BEGIN PROG LOAD LOG --";
	static const char end_mark[] = "-- END PROG LOAD LOG --";
	const char *begin = NULL, *end, *p, *name;

	memset(r, 0, sizeof(*r));
	if (!text)
		return;
	/* the last refused program's log: libbpf stops at the first refusal */
	for (p = text; (p = strstr(p, begin_mark)); p += sizeof(begin_mark) - 1)
		begin = p;
	/* the name: "prog 'NAME': BPF program load failed" (or "failed to load", "relo #3 ...") */
	name = NULL;
	for (p = text; (p = strstr(p, "prog '")); p += 6)
		if (!begin || p < begin)
			name = p + 6;
	if (name) {
		size_t n = strcspn(name, "'");

		if (n >= sizeof(r->prog))
			n = sizeof(r->prog) - 1;
		memcpy(r->prog, name, n);
		r->prog[n] = '\0';
	}
	if (begin) {
		begin = strchr(begin, '\n');
		begin = begin ? begin + 1 : text + strlen(text);
		end = strstr(begin, end_mark);
		if (!end)
			end = begin + strlen(begin);
		r->verifier = 1;
		last_two(begin, end, r);
		if (r->n)
			return;
		r->verifier = 0; /* an empty log: say what libbpf said instead */
	}
	/* no verifier log (a CO-RE or map failure): libbpf's own last lines, without its closing ones */
	end = text + strlen(text);
	p = strstr(text, "failed to load object");
	if (p) {
		while (p > text && p[-1] != '\n')
			p--;
		end = p;
	}
	last_two(text, end, r);
}

int lism_load_log_save(const char *text, const char *prog, char *path, size_t len)
{
	const char *dir = getenv("TMPDIR");
	char tmp[PATH_MAX];
	int fd, n, err = 0;
	size_t left;

	path[0] = '\0';
	if (!dir || !*dir)
		dir = "/tmp";
	for (const char *c = prog; *c; c++)
		if (!((*c >= 'a' && *c <= 'z') || (*c >= '0' && *c <= '9') || *c == '_'))
			return -EINVAL; /* a program name, never a path */
	n = snprintf(tmp, sizeof(tmp), "%s/lism-load-XXXXXX", dir);
	if (n < 0 || (size_t)n >= sizeof(tmp))
		return -ENAMETOOLONG;
	n = snprintf(path, len, "%s/lism-load-%s.log", dir, *prog ? prog : "object");
	if (n < 0 || (size_t)n >= len) {
		path[0] = '\0';
		return -ENAMETOOLONG;
	}
	fd = mkstemp(tmp); /* then renamed over the last log of the same program: they do not pile up */
	if (fd < 0)
		err = -errno;
	for (left = text ? strlen(text) : 0; !err && left;) {
		ssize_t w = write(fd, text, left);

		if (w < 0)
			err = -errno;
		else {
			text += w;
			left -= (size_t)w;
		}
	}
	if (fd >= 0 && close(fd) && !err)
		err = -errno;
	if (!err && rename(tmp, path))
		err = -errno;
	if (err) {
		if (fd >= 0)
			unlink(tmp);
		path[0] = '\0';
	}
	return err;
}

void lism_load_log_refusal(const struct lism_load_log *l, struct lism_refusal *r)
{
	lism_refusal_parse(l->text, r);
	if (lism_load_log_save(l->text ? l->text : "", r->prog, r->path, sizeof(r->path)))
		r->path[0] = '\0';
}

void lism_kernel_release(char *buf, size_t len)
{
	struct utsname u;

	if (uname(&u))
		snprintf(buf, len, "unknown");
	else
		snprintf(buf, len, "%s %s", u.release, u.version);
}

void lism_refusal_print(FILE *f, const struct lism_refusal *r)
{
	char kernel[512];

	for (int i = 0; i < r->n; i++)
		fprintf(f, "  %s: %s\n", r->verifier ? "verifier" : "libbpf", r->line[i]);
	lism_kernel_release(kernel, sizeof(kernel));
	fprintf(f, "  kernel: %s\n", kernel);
	if (lism_log_verbose())
		fprintf(f, "  the whole log is above%s%s\n", r->path[0] ? ", and in " : "", r->path);
	else if (r->path[0])
		fprintf(f, "  the whole log: %s (or rerun with -v)\n", r->path);
	else
		fprintf(f, "  the whole log could not be saved under $TMPDIR: rerun with -v to see it\n");
}

void lism_refusal_summary(const struct lism_refusal *r, char *buf, size_t len)
{
	const char *last = r->n ? r->line[r->n - 1] : "no reason given";

	if (r->verifier)
		snprintf(buf, len, "the verifier refused %s: %s", r->prog[0] ? r->prog : "a program", last);
	else
		snprintf(buf, len, "loading %s failed: %s", r->prog[0] ? r->prog : "it", last);
}
