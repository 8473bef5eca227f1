// SPDX-License-Identifier: GPL-2.0-only
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "bpf_time.h"
#include "pins.h"

/* Each program's pin, its name for metrics and JSON, and for the status line. */
static const struct {
	const char *pin, *name, *human;
} progs[LISM_PROG_MAX] = {
	[LISM_PROG_HANDSHAKE] = { LISM_PIN_PROG_SOCKOPS, "handshake", "handshake" },
	[LISM_PROG_DATA_PATH] = { LISM_PIN_PROG_MSG, "data_path", "data path" },
	[LISM_PROG_BACKSTOP] = { LISM_PIN_PROG_DESTROY, "backstop", "backstop" },
};

const char *lism_prog_name(enum lism_prog p)
{
	return (unsigned int)p < LISM_PROG_MAX ? progs[p].name : "?";
}

/* Through the pin: an id lookup would need CAP_SYS_ADMIN, which the DaemonSet does not have. */
int lism_prog_info_read(const char *pin_path, const char *name, struct bpf_prog_info *info)
{
	__u32 len = sizeof(*info);
	int fd = lism_pin_open(pin_path, name), err;

	if (fd < 0)
		return fd;
	memset(info, 0, sizeof(*info));
	err = bpf_obj_get_info_by_fd(fd, info, &len) ? -errno : 0;
	close(fd);
	return err;
}

int lism_bpf_stats_sysctl(void)
{
	FILE *f = fopen(LISM_BPF_STATS_SYSCTL, "r");
	int v = -1;

	if (!f)
		return -1;
	if (fscanf(f, "%d", &v) != 1 || v < 0)
		v = -1;
	fclose(f);
	return v > 0 ? 1 : v;
}

void lism_bpf_time_read(const char *pin_path, struct lism_bpf_time *t)
{
	struct bpf_prog_info info;

	memset(t, 0, sizeof(*t));
	t->stats_sysctl = lism_bpf_stats_sysctl();
	for (int p = 0; p < LISM_PROG_MAX; p++) {
		if (lism_prog_info_read(pin_path, progs[p].pin, &info))
			continue;
		t->prog[p].known = 1;
		t->prog[p].runs = info.run_cnt;
		t->prog[p].run_ns = info.run_time_ns;
	}
}

void lism_bpf_time_format(const struct lism_bpf_time *t, char *out, size_t len)
{
	size_t n = 0;
	__u64 runs = 0;
	int known = 0;

#define PUT(...)                                                              \
	do {                                                                  \
		int w_ = snprintf(out + (n < len ? n : len), n < len ? len - n : 0, __VA_ARGS__); \
		if (w_ > 0)                                                   \
			n += (size_t)w_;                                      \
	} while (0)

	if (len)
		out[0] = '\0';
	for (int p = 0; p < LISM_PROG_MAX; p++) {
		known += t->prog[p].known;
		runs += t->prog[p].runs;
	}
	if (!known) {
		PUT("not readable (the program pins could not be opened)");
		return;
	}
	if (t->stats_sysctl == 1)
		PUT("kernel.bpf_stats_enabled=1, so every BPF program run on this host pays two clock reads: ");
	else if (!runs) {
		PUT("not counted (BPF stats are off; 'sysctl kernel.bpf_stats_enabled=1' counts it, "
		    "at two clock reads per BPF program run on this host)");
		return;
	} else if (!t->stats_sysctl)
		PUT("counted while BPF stats were on (kernel.bpf_stats_enabled=0; a tool's BPF_ENABLE_STATS "
		    "may still keep them on): ");
	else
		PUT("counted while BPF stats were on: ");
	for (int p = 0, first = 1; p < LISM_PROG_MAX; p++) {
		const struct lism_prog_time *pt = &t->prog[p];

		if (!pt->known)
			continue;
		if (pt->runs)
			PUT("%s%s %llu ns x %llu runs", first ? "" : ", ", progs[p].human,
			    (unsigned long long)(pt->run_ns / pt->runs), (unsigned long long)pt->runs);
		else
			PUT("%s%s 0 runs", first ? "" : ", ", progs[p].human);
		first = 0;
	}
#undef PUT
	if (n >= len && len > 4)
		memcpy(out + len - 4, "...", 4);
}

void lism_bpf_stats_note(FILE *f, int stats_sysctl)
{
	if (stats_sysctl == 1)
		fprintf(f, "lism: note: kernel.bpf_stats_enabled is 1: every BPF program run, lism's included, "
			   "then reads the clock twice; an engaged connection's setup took ~14 %% longer with it "
			   "on (docs/performance.md, \"What bpf_stats costs\"). 'sysctl kernel.bpf_stats_enabled=0' "
			   "unless something here reads BPF run times\n");
}
