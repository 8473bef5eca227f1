// SPDX-License-Identifier: GPL-2.0-only
#include "feature.h"
#include "metrics.h"
#include "reason.h"

static void family(FILE *f, const char *name, const char *type, const char *help)
{
	fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void gauge(FILE *f, const char *name, const char *help, double v)
{
	family(f, name, "gauge", help);
	fprintf(f, "%s %.10g\n", name, v);
}

static void counter(FILE *f, const char *name, const char *help, __u64 v)
{
	family(f, name, "counter", help);
	fprintf(f, "%s %llu\n", name, (unsigned long long)v);
}

void lism_metrics_write(FILE *f, const struct lism_snapshot *s, const char *version)
{
	const __u64 *st = s->stats;
	char gid[34];
	__u64 cum = 0;

	lism_gid_format(s->dev.gid, gid);
	family(f, "lism_build_info", "gauge", "Build of the lism control plane serving these metrics.");
	fprintf(f, "lism_build_info{version=\"%s\",layout=\"%u\"} 1\n", version, LISM_LAYOUT_VERSION);
	family(f, "lism_device_info", "gauge", "The loopback-ism device: name, GID and CHID.");
	fprintf(f, "lism_device_info{name=\"%s\",gid=\"%s\",chid=\"0x%04x\"} 1\n", LISM_DEVICE_NAME, gid,
		s->dev.chid);
	gauge(f, "lism_active", "1 if new connections may use the shortcut.", s->dev.active);
	lism_features_metrics(f, s->features);
	gauge(f, "lism_attached", "1 if the handshake program is attached to its cgroup.", s->attached);
	gauge(f, "lism_dmbs_in_use", "DMBs (connection ends) in use.", (double)s->usage.dmbs_in_use);
	gauge(f, "lism_dmbs_max", "Limit on DMBs in use (--max-dmbs).", s->dev.max_dmbs);
	gauge(f, "lism_dmbs_high_water", "Most DMBs in use at once since load.", (double)s->usage.dmbs_hwm);
	gauge(f, "lism_dmb_pressure_ratio", "DMBs in use / max; at 1 new connections fall back.",
	      s->dev.max_dmbs ? (double)s->usage.dmbs_in_use / s->dev.max_dmbs : 0);
	gauge(f, "lism_dmb_size_bytes", "Unread bytes one end may hold before its peer's sends go over TCP.",
	      s->dev.dmb_size);
	gauge(f, "lism_connections_confirmed", "Connections using the shortcut now.", s->confirmed);
	gauge(f, "lism_shortcut_sockets", "Sockets in the shortcut map.", s->shortcut_sockets);
	gauge(f, "lism_sender_sockets", "Sockets whose sends run the shortcut's data path (the senders map).",
	      s->sender_sockets);
	counter(f, "lism_proposals_sent_total", "SYNs that carried the lism option.",
		st[LISM_S_PROPOSALS_SENT]);
	counter(f, "lism_proposals_received_total", "SYNs with the lism option seen by a listener.",
		st[LISM_S_PROPOSALS_RECV]);
	counter(f, "lism_accepts_sent_total", "SYN-ACKs that carried the lism option.",
		st[LISM_S_ACCEPTS_SENT]);
	counter(f, "lism_accepts_received_total", "SYN-ACKs with the lism option seen by a client.",
		st[LISM_S_ACCEPTS_RECV]);
	counter(f, "lism_confirms_total", "Connections confirmed onto the shortcut.", st[LISM_S_CONFIRMS]);
	counter(f, "lism_closes_total", "DMBs released by a close.", st[LISM_S_CLOSES]);
	counter(f, "lism_reaped_total",
		"DMBs released when their socket was destroyed without its close being seen.",
		st[LISM_S_REAPED]);
	counter(f, "lism_reaped_orphans_total",
		"Reaped DMBs whose socket no longer named them (found by slot and socket cookie).",
		st[LISM_S_REAPED_ORPHANS]);
	counter(f, "lism_reaped_gone_total",
		"DMBs the sweep released: their socket was freed and neither its close nor its destroy was seen.",
		st[LISM_S_REAPED_GONE]);
	counter(f, "lism_sweeps_total", "Full passes of the sweep over the DMB table.", st[LISM_S_SWEEPS]);
	counter(f, "lism_senders_joined_total",
		"Members whose sends joined the data path once data went both ways.", st[LISM_S_SENDERS_JOINED]);
	counter(f, "lism_senders_one_way_total",
		"Members that moved data one way only for long and stay on plain TCP.", st[LISM_S_SENDERS_ONE_WAY]);
	counter(f, "lism_senders_send_limits_total",
		"Members that stay on plain TCP because their send buffer (SO_SNDBUF below 128 KiB, or a "
		"tcp_wmem maximum below 256 KiB) or "
		"unsent-bytes limit (TCP_NOTSENT_LOWAT or the sysctl, below 256 KiB) is too small: through "
		"the data path such a writer waits for ACKs.",
		st[LISM_S_SENDERS_SEND_LIMITS]);
	counter(f, "lism_sender_join_fails_total",
		"Sender joins the kernel refused (socket no longer established) or that found the queue full.",
		st[LISM_S_SENDER_JOIN_FAILS]);
	counter(f, "lism_senders_left_total",
		"Senders that went back to plain TCP because their peer was gone.",
		st[LISM_S_SENDERS_LEFT]);
	counter(f, "lism_sender_leaves_refused_total",
		"Leaves refused until later: the sender's shortcut queue still held bytes, or its pair was on.",
		st[LISM_S_SENDER_LEAVES_REFUSED]);
	if (s->backstop_misses_known)
		counter(f, "lism_backstop_recursion_misses_total",
			"TCP socket destroys, host-wide, the tcp_destroy_sock backstop missed because it was "
			"already running on that CPU, since its program loaded (load --upgrade starts again "
			"at 0); a DMB whose close went unseen then waits for the sweep.",
			s->backstop_misses);
	gauge(f, "lism_bpf_stats_enabled",
	      "1 if kernel.bpf_stats_enabled is on: every BPF program run on the host then reads the clock "
	      "twice (a BPF_ENABLE_STATS holder such as bpftop does not show here).",
	      s->bpf_time.stats_sysctl == 1);
	if (s->bpf_time.prog[LISM_PROG_HANDSHAKE].known) { /* the families only with samples */
		family(f, "lism_bpf_program_runs_total", "counter",
		       "Runs of lism's BPF programs counted while BPF stats were on, since the program "
		       "loaded (load --upgrade starts again at 0).");
		for (int p = 0; p < LISM_PROG_MAX; p++)
			if (s->bpf_time.prog[p].known)
				fprintf(f, "lism_bpf_program_runs_total{program=\"%s\"} %llu\n",
					lism_prog_name(p), (unsigned long long)s->bpf_time.prog[p].runs);
		family(f, "lism_bpf_program_run_seconds_total", "counter",
		       "Time lism's BPF programs ran, counted while BPF stats were on, since the program loaded.");
		for (int p = 0; p < LISM_PROG_MAX; p++)
			if (s->bpf_time.prog[p].known)
				fprintf(f, "lism_bpf_program_run_seconds_total{program=\"%s\"} %.9f\n",
					lism_prog_name(p), s->bpf_time.prog[p].run_ns / 1e9);
	}
	counter(f, "lism_token_lost_total", "Closes (FIN_WAIT1, LAST_ACK, CLOSE) of sockets whose token named no DMB entry.",
		st[LISM_S_TOKEN_LOST]);
	counter(f, "lism_short_connections_total",
		"Confirmed connections that closed having moved too little to pay for the shortcut.",
		st[LISM_S_SHORT_CONNS]);
	family(f, "lism_fallbacks_total", "counter", "Connection ends that stayed on TCP, by reason.");
	for (unsigned int r = 1; r < LISM_R_MAX; r++)
		if (lism_reason_known(r))
			fprintf(f, "lism_fallbacks_total{reason=\"%s\",code=\"%u\"} %llu\n", lism_reason_name(r),
				r, (unsigned long long)s->reasons[r]);
	counter(f, "lism_shortcut_bytes_total", "Bytes sent through the shortcut.", st[LISM_S_SC_BYTES]);
	counter(f, "lism_shortcut_sends_total", "Sends redirected through the shortcut.", st[LISM_S_SC_MSGS]);
	counter(f, "lism_tcp_sends_total", "Sends of paired sockets that went over TCP.", st[LISM_S_TCP_MSGS]);
	counter(f, "lism_tcp_bytes_total",
		"Bytes of paired sockets sent over TCP (approximate, see docs/maps.md).",
		st[LISM_S_TCP_BYTES]);
	counter(f, "lism_sync_holds_total", "Sends kept on TCP until the peer read earlier TCP bytes.",
		st[LISM_S_SYNC_HOLDS]);
	counter(f, "lism_dmb_full_total", "Sends kept on TCP because the peer's DMB was full.",
		st[LISM_S_DMB_FULL]);
	counter(f, "lism_peer_memory_tight_total",
		"Sends kept on TCP because the peer's socket memory could have refused them "
		"(no room under a cgroup v1 kmem.tcp limit, or TCP memory pressure).",
		st[LISM_S_PEER_MEM_TIGHT]);
	counter(f, "lism_ring_pairs_total",
		"Pairs confirmed with both ends under lism exec and a device serving: ring DMBs.",
		st[LISM_S_RING_PAIRS]);
	counter(f, "lism_redirect_misses_total", "Sends whose peer was not in the shortcut map.",
		st[LISM_S_REDIRECT_MISS]);
	counter(f, "lism_events_lost_total", "Lifecycle events a reader followed but did not take in time (ring buffer full).",
		st[LISM_S_EVENTS_LOST]);
	family(f, "lism_shortcut_send_size_bytes", "histogram", "Sizes of sends through the shortcut.");
	for (unsigned int b = 0; b < LISM_HIST_BUCKETS; b++) {
		cum += s->sizes[b];
		if (b < LISM_HIST_BUCKETS - 1)
			fprintf(f, "lism_shortcut_send_size_bytes_bucket{le=\"%llu\"} %llu\n",
				(unsigned long long)lism_hist_bound(b), (unsigned long long)cum);
		else
			fprintf(f, "lism_shortcut_send_size_bytes_bucket{le=\"+Inf\"} %llu\n",
				(unsigned long long)cum);
	}
	fprintf(f, "lism_shortcut_send_size_bytes_sum %llu\n", (unsigned long long)st[LISM_S_SC_BYTES]);
	fprintf(f, "lism_shortcut_send_size_bytes_count %llu\n", (unsigned long long)cum);
}
