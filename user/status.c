// SPDX-License-Identifier: GPL-2.0-only
#include <errno.h>
#include <string.h>
#include <sys/stat.h>

#include "commands.h"
#include "event_types.h"
#include "feature.h"
#include "format.h"
#include "lism/sender.h"
#include "log.h"
#include "reason.h"
#include "status.h"

void lism_status_print(FILE *f, const char *pin_path, const struct lism_snapshot *s)
{
	char gid[34], bytes[32], dmb[32], dmbs[32];

	lism_gid_format(s->dev.gid, gid);
	lism_fmt_bytes(s->stats[LISM_S_SC_BYTES], bytes, sizeof(bytes));
	lism_fmt_bytes(s->dev.dmb_size, dmb, sizeof(dmb));
	snprintf(dmbs, sizeof(dmbs), "%lld/%u", (long long)s->usage.dmbs_in_use, s->dev.max_dmbs);
	fprintf(f, "%-13s %-33s %-6s %-6s %-11s %-9s %s\n", "Name", "GID", "CHID", "Active", "DMBs",
		"Confirmed", "Shortcut bytes");
	fprintf(f, "%-13s %-33s 0x%04X %-6s %-11s %-9u %s\n", LISM_DEVICE_NAME, gid, s->dev.chid,
		s->dev.active ? "yes" : (s->dev.flags & LISM_DEV_F_DRAINING) ? "drain" : "no", dmbs, s->confirmed,
		bytes);
	fprintf(f, "  pinned at %s, attached to cgroup %s%s\n", pin_path, s->dev.cgroup,
		s->attached ? "" : " (DETACHED)");
	fprintf(f, "  DMB size %s, DMBs high-water %lld, sockets in the shortcut %u\n", dmb,
		(long long)s->usage.dmbs_hwm, s->shortcut_sockets);
	fprintf(f, "  handshakes: %llu proposed, %llu accepted, %llu confirmed, %llu fell back\n",
		(unsigned long long)s->stats[LISM_S_PROPOSALS_SENT],
		(unsigned long long)s->stats[LISM_S_ACCEPTS_SENT],
		(unsigned long long)s->stats[LISM_S_CONFIRMS],
		(unsigned long long)s->stats[LISM_S_FALLBACKS]);
	fprintf(f, "  sends: %llu through the shortcut, %llu over TCP while paired\n",
		(unsigned long long)s->stats[LISM_S_SC_MSGS],
		(unsigned long long)s->stats[LISM_S_TCP_MSGS]);
	fprintf(f, "  policy: blocking sockets %s, churn detection ",
		(s->dev.flags & LISM_DEV_F_ALLOW_BLOCKING) ? "accelerated" : "on TCP");
	if (s->dev.flags & LISM_DEV_F_NO_CHURN_DETECT)
		fprintf(f, "off\n");
	else
		fprintf(f, "on (window %u ms, %llu connections skipped)\n", s->dev.churn_window_ms,
			(unsigned long long)s->reasons[LISM_R_SHORT_LIVED]);
	if (!(s->dev.flags & LISM_DEV_F_DATA_PATH))
		fprintf(f, "  senders: none: no data path on this instance (see data_path below); pairs are "
			"confirmed and their bytes stay on TCP (%llu ends)%s\n",
			(unsigned long long)s->reasons[LISM_R_NO_DATA_PATH],
			s->sender_sockets ? "; senders from before it went still run it" : "");
	else if (s->dev.flags & LISM_DEV_F_EAGER_SENDERS)
		fprintf(f, "  senders: eager (every member's sends run the data path from the handshake), %u now; "
			"%llu on TCP by small send limits\n",
			s->sender_sockets, (unsigned long long)s->stats[LISM_S_SENDERS_SEND_LIMITS]);
	else
		fprintf(f, "  senders: after %u data segments each way or bulk sends (timer %s), %u now; "
			"%llu joined, %llu one-way on TCP, %llu on TCP by small send limits, %llu refused, "
			"%llu left\n", LISM_SENDER_MIN_SEGS,
			s->usage.sender_timer ? "ready" : "NOT READY: sends stay on TCP",
			s->sender_sockets, (unsigned long long)s->stats[LISM_S_SENDERS_JOINED],
			(unsigned long long)s->stats[LISM_S_SENDERS_ONE_WAY],
			(unsigned long long)s->stats[LISM_S_SENDERS_SEND_LIMITS],
			(unsigned long long)s->stats[LISM_S_SENDER_JOIN_FAILS],
			(unsigned long long)s->stats[LISM_S_SENDERS_LEFT]);
	/* whether each runs: the features map (the OFF lines below say why not) */
	if (!lism_feature_enabled(&s->features[LISM_F_BACKSTOP]))
		fprintf(f, "  backstop: OFF; ");
	else if (s->backstop_misses_known)
		fprintf(f, "  backstop: tcp_destroy_sock, %llu destroys missed host-wide (recursion); ",
			(unsigned long long)s->backstop_misses);
	else
		fprintf(f, "  backstop: tcp_destroy_sock; ");
	if (lism_feature_enabled(&s->features[LISM_F_SWEEP]))
		fprintf(f, "sweep: %llu entries of vanished sockets given back\n",
			(unsigned long long)s->stats[LISM_S_REAPED_GONE]);
	else
		fprintf(f, "sweep: OFF\n");
	{
		char line[512];

		lism_bpf_time_format(&s->bpf_time, line, sizeof(line));
		fprintf(f, "  BPF time: %s\n", line);
	}
	{
		char line[1024];
		int off = 0;

		for (int ft = 0; ft < LISM_F_MAX; ft++)
			if (!lism_feature_enabled(&s->features[ft])) {
				lism_feature_off_line(ft, &s->features[ft], line, sizeof(line));
				fprintf(f, "  OFF: %s\n", line);
				off++;
			}
		if (!off)
			fprintf(f, "  features: all on (lism probe lists what each needs)\n");
	}
	if (lism_feature_enabled(&s->features[LISM_F_EXEC])) {
		if (s->exec_serving)
			fprintf(f, "  lism exec: a device serves (pid %u, ring DMBs of %u bytes), %llu ring pairs\n",
				s->exec_lease.tgid, s->exec_lease.dmb_size,
				(unsigned long long)s->stats[LISM_S_RING_PAIRS]);
		else
			fprintf(f, "  lism exec: no device serves (lism run is one): pairs under lism exec stay "
				   "on TCP\n");
	}
	if (s->events_followed) {
		char types[128];

		lism_event_types_format(s->events_followed, types, sizeof(types));
		fprintf(f, "  events: followed by a reader (%s), %llu lost\n", types,
			(unsigned long long)s->stats[LISM_S_EVENTS_LOST]);
	} else {
		fprintf(f, "  events: nobody follows them (none emitted)\n");
	}
}

static void add_u64(struct json_object *o, const char *k, __u64 v)
{
	json_object_object_add(o, k, json_object_new_uint64(v));
}

/* {"stats_enabled": bool or null, "programs": {name: {"runs", "run_time_ns"} or null}} */
static struct json_object *bpf_time_json(const struct lism_bpf_time *t)
{
	struct json_object *o = json_object_new_object(), *progs = json_object_new_object();

	json_object_object_add(o, "stats_enabled",
			       t->stats_sysctl < 0 ? NULL : json_object_new_boolean(t->stats_sysctl));
	for (int p = 0; p < LISM_PROG_MAX; p++) {
		struct json_object *one = NULL;

		if (t->prog[p].known) {
			one = json_object_new_object();
			add_u64(one, "runs", t->prog[p].runs);
			add_u64(one, "run_time_ns", t->prog[p].run_ns);
		}
		json_object_object_add(progs, lism_prog_name(p), one);
	}
	json_object_object_add(o, "programs", progs);
	return o;
}

struct json_object *lism_status_json(const char *pin_path, const struct lism_snapshot *s)
{
	struct json_object *o = json_object_new_object(), *reasons = json_object_new_object();
	char gid[34];

	lism_gid_format(s->dev.gid, gid);
	json_object_object_add(o, "name", json_object_new_string(LISM_DEVICE_NAME));
	json_object_object_add(o, "gid", json_object_new_string(gid));
	add_u64(o, "chid", s->dev.chid);
	json_object_object_add(o, "active", json_object_new_boolean(s->dev.active));
	json_object_object_add(o, "draining",
			       json_object_new_boolean(!s->dev.active && (s->dev.flags & LISM_DEV_F_DRAINING)));
	json_object_object_add(o, "attached", json_object_new_boolean(s->attached));
	json_object_object_add(o, "pin_path", json_object_new_string(pin_path));
	json_object_object_add(o, "cgroup", json_object_new_string(s->dev.cgroup));
	add_u64(o, "layout", s->dev.layout);
	add_u64(o, "dmb_size", s->dev.dmb_size);
	json_object_object_add(o, "allow_blocking",
			       json_object_new_boolean(!!(s->dev.flags & LISM_DEV_F_ALLOW_BLOCKING)));
	json_object_object_add(o, "churn_detect",
			       json_object_new_boolean(!(s->dev.flags & LISM_DEV_F_NO_CHURN_DETECT)));
	add_u64(o, "churn_window_ms", s->dev.churn_window_ms);
	add_u64(o, "max_dmbs", s->dev.max_dmbs);
	add_u64(o, "dmbs_in_use", s->usage.dmbs_in_use < 0 ? 0 : (__u64)s->usage.dmbs_in_use);
	add_u64(o, "dmbs_hwm", s->usage.dmbs_hwm < 0 ? 0 : (__u64)s->usage.dmbs_hwm);
	add_u64(o, "confirmed", s->confirmed);
	add_u64(o, "shortcut_sockets", s->shortcut_sockets);
	add_u64(o, "sender_sockets", s->sender_sockets);
	add_u64(o, "proposals_sent", s->stats[LISM_S_PROPOSALS_SENT]);
	add_u64(o, "proposals_received", s->stats[LISM_S_PROPOSALS_RECV]);
	add_u64(o, "accepts_sent", s->stats[LISM_S_ACCEPTS_SENT]);
	add_u64(o, "accepts_received", s->stats[LISM_S_ACCEPTS_RECV]);
	add_u64(o, "confirms", s->stats[LISM_S_CONFIRMS]);
	add_u64(o, "fallbacks", s->stats[LISM_S_FALLBACKS]);
	add_u64(o, "closes", s->stats[LISM_S_CLOSES]);
	add_u64(o, "shortcut_msgs", s->stats[LISM_S_SC_MSGS]);
	add_u64(o, "shortcut_bytes", s->stats[LISM_S_SC_BYTES]);
	add_u64(o, "tcp_msgs", s->stats[LISM_S_TCP_MSGS]);
	add_u64(o, "tcp_bytes", s->stats[LISM_S_TCP_BYTES]);
	add_u64(o, "sync_holds", s->stats[LISM_S_SYNC_HOLDS]);
	add_u64(o, "dmb_full", s->stats[LISM_S_DMB_FULL]);
	add_u64(o, "peer_mem_tight", s->stats[LISM_S_PEER_MEM_TIGHT]);
	add_u64(o, "ring_pairs", s->stats[LISM_S_RING_PAIRS]);
	add_u64(o, "redirect_miss", s->stats[LISM_S_REDIRECT_MISS]);
	add_u64(o, "events_lost", s->stats[LISM_S_EVENTS_LOST]);
	add_u64(o, "reaped", s->stats[LISM_S_REAPED]);
	add_u64(o, "reaped_orphans", s->stats[LISM_S_REAPED_ORPHANS]);
	add_u64(o, "reaped_gone", s->stats[LISM_S_REAPED_GONE]);
	add_u64(o, "sweeps", s->stats[LISM_S_SWEEPS]);
	json_object_object_add(o, "eager_senders",
			       json_object_new_boolean(s->dev.flags & LISM_DEV_F_EAGER_SENDERS));
	json_object_object_add(o, "sender_timer", json_object_new_boolean(s->usage.sender_timer));
	add_u64(o, "senders_joined", s->stats[LISM_S_SENDERS_JOINED]);
	add_u64(o, "senders_one_way", s->stats[LISM_S_SENDERS_ONE_WAY]);
	add_u64(o, "senders_send_limits", s->stats[LISM_S_SENDERS_SEND_LIMITS]);
	add_u64(o, "sender_join_fails", s->stats[LISM_S_SENDER_JOIN_FAILS]);
	add_u64(o, "senders_left", s->stats[LISM_S_SENDERS_LEFT]);
	add_u64(o, "sender_leaves_refused", s->stats[LISM_S_SENDER_LEAVES_REFUSED]);
	json_object_object_add(o, "backstop", json_object_new_boolean(s->backstop));
	json_object_object_add(o, "backstop_recursion_misses",
			       s->backstop_misses_known ? json_object_new_uint64(s->backstop_misses) : NULL);
	{
		char types[128];

		lism_event_types_format(s->events_followed, types, sizeof(types));
		json_object_object_add(o, "events_followed", json_object_new_string(types));
	}
	for (unsigned int r = 1; r < LISM_R_MAX; r++)
		if (lism_reason_known(r))
			add_u64(reasons, lism_reason_name(r), s->reasons[r]);
	json_object_object_add(o, "fallback_reasons", reasons);
	json_object_object_add(o, "bpf_time", bpf_time_json(&s->bpf_time));
	json_object_object_add(o, "features", lism_features_json(s->features));
	{
		struct json_object *x = json_object_new_object();

		json_object_object_add(x, "device_serving", json_object_new_boolean(s->exec_serving));
		json_object_object_add(x, "device_pid",
				       s->exec_serving ? json_object_new_uint64(s->exec_lease.tgid) : NULL);
		add_u64(x, "ring_pairs", s->stats[LISM_S_RING_PAIRS]);
		json_object_object_add(o, "exec", x);
	}
	return o;
}

int lism_cmd_status(const struct lism_common_opts *co, const struct lism_status_opts *o)
{
	struct lism_instance in;
	struct lism_snapshot s;
	int err;

	if (o->gone) {
		struct stat st;

		if (stat(co->pin_path, &st) && errno == ENOENT) {
			printf("lism: nothing is pinned at %s\n", co->pin_path);
			return LISM_EXIT_OK;
		}
		lism_err("%s is still there", co->pin_path);
		return LISM_EXIT_STATE;
	}
	err = lism_instance_open(&in, co->pin_path);
	if (err) {
		if (err == -ENOENT) {
			lism_err("not loaded (nothing pinned at %s)", co->pin_path);
			int custom = strcmp(co->pin_path, LISM_DEFAULT_PIN_PATH) != 0;

			lism_hint("load it with 'lism load%s%s'", custom ? " --pin-path " : "",
				  custom ? co->pin_path : "");
		} else if (err == -EPROTO) {
			lism_err("the pins at %s are of another lism layout", co->pin_path);
			lism_hint("read them with the lism build that loaded them");
		} else {
			lism_err("opening the pins at %s failed: %s", co->pin_path, strerror(-err));
			if (err == -EPERM || err == -EACCES)
				lism_hint("the pins are root-only: run as root");
		}
		return LISM_EXIT_STATE;
	}
	err = lism_layout_check(&in); /* before the snapshot reads this build's structs */
	if (err) {
		lism_instance_close(&in);
		return err;
	}
	err = lism_snapshot_read(&in, &s);
	lism_instance_close(&in);
	if (err) {
		lism_err("reading the instance at %s failed: %s", co->pin_path, strerror(-err));
		return LISM_EXIT_FAIL;
	}
	if (co->json) {
		struct json_object *j = lism_status_json(co->pin_path, &s);

		puts(json_object_to_json_string_ext(j, JSON_C_TO_STRING_PLAIN));
		json_object_put(j);
	} else {
		lism_status_print(stdout, co->pin_path, &s);
	}
	return LISM_EXIT_OK;
}
