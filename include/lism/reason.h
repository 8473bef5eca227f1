/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Why a connection did not take the shortcut (SMC_CLC_DECL_* analog).
 * Codes are ABI: they appear in pinned maps and events, so never renumber;
 * add new ones at the end.  A retired code is never reused: 8 (no-saved-syn,
 * never raised: a listener that cannot read the SYN's option does not
 * answer, and the active end falls back with peer-no-lism), 16 (sync-stuck:
 * a sender mostly on TCP left the data path; removed with layout 14, its
 * ablation showed no gain, docs/benchmarks.md).
 */
#ifndef LISM_REASON_H
#define LISM_REASON_H

/* X(code, enum suffix, name, explanation) */
#define LISM_REASONS(X)                                                                          \
	X(0, NONE, "none", "no fallback")                                                         \
	X(1, INACTIVE, "inactive", "lism is switched off (lism set active off)")                 \
	X(2, PEER_NO_LISM, "peer-no-lism",                                                        \
	  "the peer did not answer with the lism option (not under lism, listener older than "   \
	  "lism, syncookies, or the option was stripped)")                                        \
	X(3, GID_MISMATCH, "gid-mismatch", "the peer's option names another device (another kernel)") \
	X(4, MAX_DMB, "max-dmb", "the DMB table is full (--max-dmbs)")                           \
	X(5, HANDSHAKE_INVALID, "handshake-invalid",                                              \
	  "the tokens in the handshake do not name each other in this kernel's table")           \
	X(6, BLOCKING, "blocking-socket",                                                         \
	  "the socket is in blocking mode: the kernel's sockmap receive path can fail a blocking " \
	  "recv() with EAGAIN, so it stays on TCP")                                               \
	X(7, PEER_DECLINED, "peer-declined", "the peer's end fell back (see its reason)")         \
	X(9, SOCKMAP, "sockmap-error", "adding the socket to the shortcut map failed")            \
	X(10, OPT_SPACE, "option-space", "no room for the option in the SYN (e.g. TCP Fast Open)") \
	X(11, PEER_GONE, "peer-gone", "the peer closed before the connection was confirmed")     \
	X(12, TOKEN_CLAIMED, "token-claimed",                                                     \
	  "a second SYN named a token another connection already answered")                      \
	X(13, NOT_CONFIRMED, "not-confirmed", "the handshake did not complete")                   \
	X(14, POLICY, "policy", "excluded by --exclude-port / --include-port")                    \
	X(15, SHORT_LIVED, "short-lived",                                                         \
	  "recent connections to this destination moved too little to pay for the shortcut "      \
	  "(churn detection; every 64th still tries)")                                             \
	X(17, NESTED, "nested-instance",                                                          \
	  "another lism instance, attached to a cgroup nearer the socket, handles it")           \
	X(18, NO_DATA_PATH, "no-data-path",                                                       \
	  "the pair is confirmed but this instance runs no data path ('lism status' says why, "  \
	  "e.g. the kernel lacks it): its bytes stay on TCP")                                    \
	X(19, EXEC_NO_DEVICE, "exec-no-device",                                                   \
	  "both ends run under lism exec, but no lism device served (lism run): the pair stays "  \
	  "on TCP")                                                                               \
	X(20, EXEC_PEER_NO_LIB, "exec-peer-no-lib",                                               \
	  "only one end runs under lism exec (the other is not preloaded: a static binary, Go): " \
	  "the pair stays on TCP")                                                                \
	X(21, EXEC_UNDECIDED, "exec-undecided",                                                   \
	  "under lism exec, the passive end had not confirmed the pair when the active end's "    \
	  "process needed an answer (its last ACK was dropped, e.g. a full accept queue): the "   \
	  "pair stays on TCP")

/* Codes retired, never reused: no reason names them any more. */
#define LISM_REASON_RETIRED(code) ((code) == 8 || (code) == 16)

enum lism_reason {
#define LISM_REASON_ENUM(code, sym, name, text) LISM_R_##sym = code,
	LISM_REASONS(LISM_REASON_ENUM)
#undef LISM_REASON_ENUM
	LISM_R_MAX
};

#endif
