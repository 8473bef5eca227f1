// SPDX-License-Identifier: GPL-2.0-only
/* The feature table: core and optional parts of lism, and what is said when one is off. */
#include <bpf/libbpf.h>
#include <criterion/criterion.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "feature.h"
#include "objects.h"

Test(feature, only_the_handshake_is_core)
{
	for (int f = 0; f < LISM_F_MAX; f++)
		cr_assert_eq(lism_feature_info(f)->core, f == LISM_F_HANDSHAKE,
			     "%s", lism_feature_info(f)->name);
	cr_assert_null(lism_feature_info(LISM_F_MAX));
	cr_assert_null(lism_feature_info(-1));
}

Test(feature, every_feature_is_named_and_says_what_works_without_it)
{
	for (int a = 0; a < LISM_F_MAX; a++) {
		const struct lism_feature_info *fi = lism_feature_info(a);

		cr_assert_not_null(fi->name);
		cr_assert_gt(strlen(fi->title), 3, "%s", fi->name);
		cr_assert_gt(strlen(fi->without), 10, "%s", fi->name);
		cr_assert_not_null(fi->programs, "%s", fi->name);
		/* a Prometheus label value and a JSON key: lower case, digits, underscores */
		for (const char *c = fi->name; *c; c++)
			cr_assert((*c >= 'a' && *c <= 'z') || *c == '_', "%s", fi->name);
		cr_assert_eq(lism_feature_by_name(fi->name), a);
		for (int b = a + 1; b < LISM_F_MAX; b++)
			cr_assert_str_neq(fi->name, lism_feature_info(b)->name);
		/* an optional part must say what still works; a core one that lism does not load */
		if (fi->core)
			cr_assert_not_null(strstr(fi->without, "does not load"), "%s", fi->name);
		else
			cr_assert(strstr(fi->without, "work") || strstr(fi->without, "still"), "%s: %s", fi->name,
				  fi->without);
		if (fi->needed_by)
			cr_assert_eq(strncmp(fi->needed_by, "lism ", 5), 0, "%s", fi->name);
	}
	cr_assert_eq(lism_feature_by_name("nonsense"), -1);
	cr_assert_str_eq(lism_feature_info(LISM_F_CONNS)->needed_by, "lism conns");
}

/* Every program of every object belongs to exactly one feature, and no feature names a program that is not built. */
Test(feature, every_program_built_belongs_to_one_feature)
{
	int seen[LISM_F_MAX] = { 0 };

	for (size_t i = 0; i < lism_n_objects; i++) {
		struct bpf_object *obj = lism_object_open(&lism_objects[i], NULL);
		struct bpf_program *p;

		cr_assert_not_null(obj, "object %s", lism_objects[i].name);
		bpf_object__for_each_program(p, obj) {
			int f = lism_feature_of_program(bpf_program__name(p));

			cr_assert_geq(f, 0, "program %s of object %s has no feature", bpf_program__name(p),
				      lism_objects[i].name);
			seen[f]++;
			/* an optional feature's programs live outside the core object */
			cr_assert_eq(lism_feature_info(f)->core, !strcmp(lism_objects[i].name, "core"),
				     "%s in object %s", bpf_program__name(p), lism_objects[i].name);
		}
		bpf_object__close(obj);
	}
	for (int f = 0; f < LISM_F_MAX; f++) {
		const char *progs = lism_feature_info(f)->programs;
		int n = 0;

		for (const char *c = progs; *c; c++)
			n += *c == ',';
		cr_assert_eq(seen[f], *progs ? n + 1 : 0, "%s names %s, %d built", lism_feature_info(f)->name,
			     progs, seen[f]);
	}
}

Test(feature, on_and_off_are_recorded_with_the_reason)
{
	struct lism_feature_state st;
	char line[1024];

	lism_feature_off(&st, LISM_FC_VERIFIER, "the verifier refused %s: %s", "lism_iter_socks",
			 "R2 type=untrusted_ptr_ expected=ptr_");
	cr_assert_not(lism_feature_enabled(&st));
	cr_assert_eq(st.cause, LISM_FC_VERIFIER);
	lism_feature_off_line(LISM_F_CONNS, &st, line, sizeof(line));
	cr_assert_not_null(strstr(line, "conns"), "%s", line);
	cr_assert_not_null(strstr(line, "untrusted_ptr_"), "%s", line);
	cr_assert_not_null(strstr(line, "status, stats, events and /metrics work"), "%s", line);
	cr_assert_null(strchr(line, '\n'), "one line: %s", line);
	lism_feature_on(&st);
	cr_assert(lism_feature_enabled(&st));
	cr_assert_str_empty(st.why);
	/* a reason longer than the map's field is cut, never overflows */
	char longer[1000];

	memset(longer, 'x', sizeof(longer) - 1);
	longer[sizeof(longer) - 1] = '\0';
	lism_feature_off(&st, LISM_FC_KERNEL, "%s", longer);
	cr_assert_eq(strlen(st.why), sizeof(st.why) - 1);
}

Test(feature, json_and_metrics_show_every_feature)
{
	struct lism_feature_state st[LISM_F_MAX];
	struct json_object *j, *one, *v;
	char *text = NULL;
	size_t len = 0;
	FILE *f;

	for (int i = 0; i < LISM_F_MAX; i++)
		lism_feature_on(&st[i]);
	lism_feature_off(&st[LISM_F_BACKSTOP], LISM_FC_ATTACH, "attaching lism_destroy failed");
	j = lism_features_json(st);
	for (int i = 0; i < LISM_F_MAX; i++) {
		cr_assert(json_object_object_get_ex(j, lism_feature_info(i)->name, &one));
		cr_assert(json_object_object_get_ex(one, "enabled", &v));
		cr_assert_eq(json_object_get_boolean(v), i != LISM_F_BACKSTOP);
		cr_assert(json_object_object_get_ex(one, "core", &v));
		cr_assert_eq(json_object_get_boolean(v), lism_feature_info(i)->core);
	}
	cr_assert(json_object_object_get_ex(j, "backstop", &one));
	cr_assert(json_object_object_get_ex(one, "reason", &v));
	cr_assert_str_eq(json_object_get_string(v), "attaching lism_destroy failed");
	cr_assert(json_object_object_get_ex(one, "cause", &v));
	cr_assert_str_eq(json_object_get_string(v), "attach");
	cr_assert(json_object_object_get_ex(one, "without", &v));
	cr_assert_str_eq(json_object_get_string(v), lism_feature_info(LISM_F_BACKSTOP)->without);
	cr_assert(json_object_object_get_ex(j, "conns", &one));
	cr_assert_not(json_object_object_get_ex(one, "reason", &v), "a feature that runs has no reason");
	json_object_put(j);

	f = open_memstream(&text, &len);
	lism_features_metrics(f, st);
	fclose(f);
	cr_assert_not_null(strstr(text, "lism_feature_enabled{feature=\"backstop\",core=\"0\"} 0\n"), "%s", text);
	cr_assert_not_null(strstr(text, "lism_feature_enabled{feature=\"handshake\",core=\"1\"} 1\n"), "%s", text);
	cr_assert_not_null(strstr(text, "# TYPE lism_feature_enabled gauge\n"));
	free(text);
}

Test(feature, an_unrecorded_feature_is_off_and_says_so)
{
	struct lism_feature_state st = { 0 };
	char line[512];

	cr_assert_not(lism_feature_enabled(&st));
	lism_feature_off_line(LISM_F_SWEEP, &st, line, sizeof(line));
	cr_assert_not_null(strstr(line, "not recorded"), "%s", line);
}

Test(feature, the_test_switch_names_features_exactly)
{
	setenv("LISM_TEST_REJECT", "backstop,conns", 1);
	cr_assert(lism_test_reject(LISM_F_CONNS));
	cr_assert(lism_test_reject(LISM_F_BACKSTOP));
	cr_assert_not(lism_test_reject(LISM_F_SWEEP));
	setenv("LISM_TEST_REJECT", "con", 1);
	cr_assert_not(lism_test_reject(LISM_F_CONNS));
	unsetenv("LISM_TEST_REJECT");
	cr_assert_not(lism_test_reject(LISM_F_CONNS));
}
