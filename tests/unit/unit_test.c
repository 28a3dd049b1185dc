/*
 * unit_test.c - C unit tests: the nvcc option table and parser, key
 * derivation, the metadata validator, dependency files, manifests, sizes,
 * the spill detector of check_spills, named counters, where paths resolve,
 * the journal's reader for reports (bounded lines, skimmed records), a
 * worker thread started away from its creator's CPU.
 * Prints one line per failed check and "N passed, N failed" at the end.
 */
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "base/compress.h"
#include "base/fs.h"
#include "base/thread.h"
#include "compile/diagnostics.h"
#include "compile/lookup.h"
#include "compile/publish.h"
#include "cudajitcache.h"
#include "keys/nvcc_args.h"
#ifdef CJC_HAVE_CURL
#include "remote/oci.h"
#endif

static int passed, failed;
static void test_oci_manifest(void);
static void test_oci_challenge(void);

#define CHECK(cond)                                                                  \
	do {                                                                         \
		if (cond) {                                                          \
			passed++;                                                    \
		} else {                                                             \
			failed++;                                                    \
			fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
		}                                                                    \
	} while (0)

static void test_option_table_sorted(void)
{
	size_t n = cjc_nvcc_option_count();
	CHECK(n > 100);
	for (size_t i = 1; i < n; i++)
		CHECK(strcmp(cjc_nvcc_option_name(i - 1), cjc_nvcc_option_name(i)) < 0);
	for (size_t i = 0; i < n; i++)
		CHECK(cjc_nvcc_option_find(cjc_nvcc_option_name(i)) != NULL);
}

/* The environment's table (key.c) is bsearched: sorted, names unique; a
 * rule that makes a compile uncacheable says why. */
static void test_env_table(void)
{
	for (size_t i = 1; i < cjc_env_count; i++)
		CHECK(strcmp(cjc_env_vars[i - 1].name, cjc_env_vars[i].name) < 0);
	for (size_t i = 0; i < cjc_env_count; i++) {
		CHECK(cjc_env_find(cjc_env_vars[i].name) == &cjc_env_vars[i]);
		CHECK((cjc_env_vars[i].rule == CJC_ENV_UNCACHEABLE ||
		       cjc_env_vars[i].rule == CJC_ENV_DIRECTORY) == (cjc_env_vars[i].why != NULL));
	}
	CHECK(cjc_env_find("PTXAS_FLAGS")->rule == CJC_ENV_KEYED);
	CHECK(cjc_env_find("GCC_EXEC_PREFIX")->rule == CJC_ENV_UNCACHEABLE);
	CHECK(!cjc_env_find("HOME_NOT_READ"));
	/* one pass over the environment answers as getenv does, for each */
	CHECK(cjc_env_count <= CJC_ENV_SLOTS);
	setenv("PTXAS_FLAGS", "-v", 1);
	setenv("CPATH", "", 1);
	setenv("TMPDI", "x", 1); /* a prefix of a name, and names one longer */
	setenv("TMPDIRX", "x", 1);
	setenv("INCLUDES_", "x", 1);
	struct cjc_env e;
	cjc_env_read(&e);
	for (size_t i = 0; i < cjc_env_count; i++) {
		const char *g = getenv(cjc_env_vars[i].name);
		CHECK((!g && !e.value[i]) || (g && e.value[i] && !strcmp(g, e.value[i])));
	}
	CHECK(e.value[cjc_env_find("PTXAS_FLAGS") - cjc_env_vars] &&
	      !strcmp(e.value[cjc_env_find("PTXAS_FLAGS") - cjc_env_vars], "-v"));
	CHECK(!e.value[cjc_env_find("INCLUDES") - cjc_env_vars] || getenv("INCLUDES"));
	unsetenv("PTXAS_FLAGS");
	unsetenv("CPATH");
	unsetenv("TMPDI");
	unsetenv("TMPDIRX");
	unsetenv("INCLUDES_");
	struct cjc_strvec w = CJC_STRVEC_INIT;
	CHECK(!cjc_key_env_words(" -Ia \"-Ib c\" '-Dd=e f' ", &w));
	CHECK(w.n == 3 && !strcmp(w.v[1], "-Ib c") && !strcmp(w.v[2], "-Dd=e f"));
	cjc_strvec_clear(&w);
	CHECK(cjc_key_env_words("-I$HOME", &w) == -1);
	cjc_strvec_clear(&w);
	CHECK(cjc_key_env_words("-I\"a", &w) == -1);
	cjc_strvec_clear(&w);
}

/* rules.h: the expansions in a preprocessor's output, stringized too;
 * with SOURCE_DATE_EPOCH, the stamp's alone; shapes near but not the same. */
static void test_rules_expanded(void)
{
	static const struct {
		const char *text, *plain, *epoch;
	} cases[] = {
		{ "x = \"23:05:59\";", "__TIME__", NULL },
		{ "x = \"Dec  7 2026\";", "__DATE__", NULL },
		{ "s(\"\\\"May 18 2033\\\"\")", "__DATE__", NULL },
		{ "\"Wed May 18 03:33:20 2033\"", "__TIMESTAMP__", "__TIMESTAMP__" },
		{ "\"Sun Sep  9 01:46:40 2001\"", "__TIMESTAMP__", "__TIMESTAMP__" },
		{ "a::b ? 1:2 : 3; \"2:05:59\" \"Dex  7 2026\" \"Dec 7 2026\"", NULL, NULL },
	};
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		const char *t = cases[i].text,
			   *plain = cjc_rules_clock_expanded(t, strlen(t), false),
			   *epoch = cjc_rules_clock_expanded(t, strlen(t), true);
		CHECK(cases[i].plain ? plain && !strcmp(plain, cases[i].plain) : !plain);
		CHECK(cases[i].epoch ? epoch && !strcmp(epoch, cases[i].epoch) : !epoch);
	}
}

/* rules.h: the time macros after every splice the preprocessor joins,
 * SOURCE_DATE_EPOCH's two, the words, and the include test's spellings. */
static void test_rules(void)
{
	static const char *const clocked[] = { "__TIME__", "x __TI\\\nME__ y", "__DA\\ \t\nTE__",
					       "__TI\\\r\nME__", "__TI?\?/\nME__", "__TIME\\\n\\\n__",
					       "-DNOW=__TIMESTAMP__" };
	for (size_t i = 0; i < sizeof clocked / sizeof *clocked; i++)
		CHECK(cjc_rules_time_macro(clocked[i], strlen(clocked[i]), false) != NULL);
	CHECK(!cjc_rules_time_macro("__TI ME__ __TI\\x\nME__", 21, false));
	CHECK(!cjc_rules_time_macro("__TIME__", 7, false)); /* the length is kept */
	CHECK(!cjc_rules_time_macro("__DATE__ __TIME__", 17, true));
	CHECK(!strcmp(cjc_rules_time_macro("__TIMESTAMP__", 13, true), "__TIMESTAMP__"));
	char *words[] = { "-O3", NULL, "-DT=__TI\\\nME__" };
	CHECK(!strcmp(cjc_rules_time_macro_words(words, 3, false), "__TIME__"));
	CHECK(!cjc_rules_time_macro_words(words, 2, false));
	static const char *const includes[] = { "/* c */ #include <a.h>", "%:include <a.h>",
						"#inc\\\nlude <a.h>", "\f#include <a.h>",
						"#if __has_include(<a.h>)" };
	for (size_t i = 0; i < sizeof includes / sizeof *includes; i++)
		CHECK(cjc_rules_may_include(includes[i], strlen(includes[i])));
	CHECK(!cjc_rules_may_include("#define inc lude", 16));
	/* paths: __FILE__ at the source's site, behind a splice, through a header's macro */
	struct cjc_buf t[2] = { CJC_BUF_INIT, CJC_BUF_INIT };
	cjc_buf_adds(&t[0], "int f() { return g(); }\n");
	cjc_buf_adds(&t[1], "#define CHECKED(x) __FI\\\nLE__\n");
	CHECK(!cjc_rules_path_reaches(t, 2, "-O3\n", 4));
	CHECK(cjc_rules_path_reaches(t, 2, "-O3\n-lineinfo\n", 14));
	CHECK(cjc_rules_path_reaches(t, 2, "-DW=__FILE__\n", 13));
	cjc_buf_adds(&t[0], "int h() { return CHECKED(1); }\n");
	CHECK(cjc_rules_path_reaches(t, 2, "", 0));
	cjc_buf_reset(&t[0]);
	cjc_buf_adds(&t[0], "const char *w = __builtin_FI\\\nLE();\n");
	CHECK(cjc_rules_path_reaches(t, 1, NULL, 0));
	cjc_buf_release(&t[0]);
	cjc_buf_release(&t[1]);
}

/* rules.h: gcc's long include spellings, files no dependency list names,
 * and the stage options that read or write files. */
static void test_rules_unlisted(void)
{
	static const char *const includes[] = { "--include-directory=inc",
						"--include=pre.h",
						"--imacros=pre.h",
						"--include-directory-after=d",
						"-O2,--include-with-prefix=d",
						"--prefix=/opt/",
						"--sysroot=/s",
						"-imultilib d" };
	for (size_t i = 0; i < sizeof includes / sizeof *includes; i++)
		CHECK(cjc_rules_host_include(includes[i]));
	CHECK(!cjc_rules_host_include("-O2,-finline-limit=5"));
	static const char *const read[] = { "asm(\".incbin \\\"a.bin\\\"\");",
					    "asm(\".INCBIN \\\"a\\\"\");",
					    "asm(\".\" \"incbin x\");",
					    "asm(\".inc\\\nbin x\");",
					    "asm(\".include \\\"m.s\\\"\");",
					    "#pragma GCC dependency \"f\"",
					    "# pragma GCC /* c */ dependency \"f\"",
					    "_Pragma(\"GCC dependency \\\"f\\\"\")",
					    "#pragma GCC \\\n dependency \"f\"",
					    "DO(GCC\n  dependency \"f\")" };
	for (size_t i = 0; i < sizeof read / sizeof *read; i++)
		CHECK(cjc_rules_unlisted_file(read[i], strlen(read[i])) != NULL);
	static const char *const quiet[] = {
		"#include <a.h>",          "// a dependency of GCC builds",
		"/* GCC: a dependency */", "#pragma GCC diagnostic push",
		"int GCCdependency;",      "x.includes"
	};
	for (size_t i = 0; i < sizeof quiet / sizeof *quiet; i++)
		CHECK(!cjc_rules_unlisted_file(quiet[i], strlen(quiet[i])));
	char *why = cjc_rules_unlisted_file_why("#pragma GCC dependency \"f\"", 26, "k.cu");
	CHECK(why && cjc_ends_with(why, " in k.cu"));
	free(why);
	static const char *const host[] = { "-fprofile-use",      "-O2,-fprofile-use=p",
					    "--profile-use",      "-fauto-profile=a",
					    "-fprofile-generate", "--coverage",
					    "-fdump-tree-all",    "-gsplit-dwarf",
					    "-fstack-usage" };
	for (size_t i = 0; i < sizeof host / sizeof *host; i++)
		CHECK(cjc_rules_stage_option("Xcompiler", host[i]) &&
		      cjc_rules_stage_option(NULL, host[i]));
	CHECK(!cjc_rules_stage_option("Xcompiler", "-O2,-fno-profile-use,-Wall"));
	CHECK(!cjc_rules_stage_option("Xptxas", "-fprofile-use"));
	static const char *const cudafe_inert[] = { "--diag_suppress=177", "--diag_suppress,177",
						    "--display_error_number",
						    "--diag_warning=set_but_not_used" };
	for (size_t i = 0; i < sizeof cudafe_inert / sizeof *cudafe_inert; i++)
		CHECK(!cjc_rules_stage_option("Xcudafe", cudafe_inert[i]));
	static const char *const cudafe_files[] = { "--preinclude=pre.h",
						    "--diag_suppress=1,--preinclude=p", "pre.h",
						    "--diag_suppress=../x",
						    "--include_directory=d" };
	for (size_t i = 0; i < sizeof cudafe_files / sizeof *cudafe_files; i++)
		CHECK(cjc_rules_stage_option("cudafe-options", cudafe_files[i]));
	CHECK(cjc_rules_flag_variable("-O3 -Xcompiler -fprofile-use"));
	CHECK(cjc_rules_flag_variable("-Xcudafe --preinclude=p.h"));
	CHECK(cjc_rules_flag_variable("--cudafe-options=--preinclude=p.h -O3"));
	CHECK(cjc_rules_flag_variable("-O3 -Xcudafe"));
	CHECK(!cjc_rules_flag_variable("-Xcudafe --diag_suppress=177 -O3 -Iinc"));
	CHECK(!cjc_rules_flag_variable(NULL));
}

static void test_option_lookups(void)
{
	CHECK(cjc_nvcc_option_find("I") && cjc_nvcc_option_takes_value(cjc_nvcc_option_find("I")));
	CHECK(cjc_nvcc_option_find("gencode") && cjc_nvcc_option_takes_value(cjc_nvcc_option_find("gencode")));
	CHECK(cjc_nvcc_option_find("c") && !cjc_nvcc_option_takes_value(cjc_nvcc_option_find("c")));
	CHECK(cjc_nvcc_option_find("Ifoo") == NULL);
	CHECK(cjc_nvcc_option_find("no-such-option") == NULL);
}

static void parse(struct cjc_compile *c, const char *line)
{
	struct cjc_strvec words = CJC_STRVEC_INIT;
	char *copy = cjc_xstrdup(line), *save = NULL;
	for (char *t = strtok_r(copy, " ", &save); t; t = strtok_r(NULL, " ", &save))
		cjc_strvec_push(&words, t);
	cjc_compile_parse((int)words.n, words.v, NULL, c);
	cjc_strvec_clear(&words);
	free(copy);
}

static void test_parse_compiles(void)
{
	struct cjc_compile c;
	parse(&c, "-c x.cu -o out/x.o -Iinc -DA=1 -O3 -std=c++17 -arch=sm_90 -MD -MF x.d");
	CHECK(!c.uncacheable && c.kind == CJC_KIND_OBJECT);
	CHECK(!strcmp(c.source, "x.cu") && !strcmp(c.output, "out/x.o"));
	CHECK(c.dep_requested && !strcmp(c.dep_file, "x.d") && !strcmp(c.dep_target, "out/x.o"));
	CHECK(!cjc_strvec_contains(&c.key_args, "out/x.o") && !cjc_strvec_contains(&c.key_args, "-MD"));
	CHECK(cjc_strvec_contains(&c.key_args, "-Iinc") && cjc_strvec_contains(&c.search.dirs, "inc"));
	CHECK(!strcmp(json_string_value(json_object_get(c.options, "std")), "c++17"));
	CHECK(!strcmp(json_string_value(json_array_get(json_object_get(c.options, "archs"), 0)), "sm_90"));
	cjc_compile_release(&c);

	parse(&c, "--fatbin -gencode=arch=compute_80,code=[compute_80,sm_80] k.cu");
	CHECK(!c.uncacheable && c.kind == CJC_KIND_FATBIN && !strcmp(c.output, "k.fatbin"));
	CHECK(json_array_size(json_object_get(c.options, "archs")) == 2);
	cjc_compile_release(&c);

	parse(&c, "-c -rdc=true a.cu -odir objs -MD");
	CHECK(c.kind == CJC_KIND_RDC_OBJECT && !strcmp(c.output, "objs/a.o") && !strcmp(c.dep_file, "objs/a.d"));
	cjc_compile_release(&c);

	parse(&c, "--ptx -g -Xcompiler -fPIC a.cu --output-file=a.ptx");
	CHECK(c.kind == CJC_KIND_PTX && c.place.records_dirs && !strcmp(c.place.keys_cwd, "-g") &&
	      !strcmp(c.output, "a.ptx"));
	CHECK(cjc_strvec_contains(&c.key_args, "-fPIC"));
	cjc_compile_release(&c);
}

static void test_parse_uncacheable(void)
{
	static const char *const lines[] = {
		"a.o b.o -o app", "-E a.cu", "-c a.cu b.cu", "-c", "-c a.cu -keep", "-M a.cu",
		"-c a.cu --frobnicate", "-c a.cu -o", "-lib a.cu -o a.a", "-c a.o", "--version",
		"-c a.cu -rdc=maybe", "-dlink a.o -o d.o", "-c - -o a.o",
	};
	for (size_t i = 0; i < sizeof lines / sizeof *lines; i++) {
		struct cjc_compile c;
		parse(&c, lines[i]);
		if (!c.uncacheable)
			fprintf(stderr, "expected uncacheable: %s\n", lines[i]);
		CHECK(c.uncacheable != NULL);
		cjc_compile_release(&c);
	}
	struct cjc_compile c;
	parse(&c, "-c a.cu -forward-unknown-to-host-compiler -fPIC -Wall");
	CHECK(!c.uncacheable);
	cjc_compile_release(&c);
}

static void test_keys(void)
{
	char *args[] = { "-c", "k.cu", "-DA=1" };
	struct cjc_key_input in = { .kind = "object", .nvcc_digest = "n", .host_digest = "h",
		.args = args, .nargs = 3, .cwd = "" };
	char a[65], b[65];
	unsetenv("PTXAS_FLAGS");
	cjc_key_direct(&in, a);
	cjc_key_direct(&in, b);
	CHECK(!strcmp(a, b) && cjc_is_hex64(a));
	in.kind = "ptx";
	cjc_key_direct(&in, b);
	CHECK(strcmp(a, b));
	in.kind = "object";
	in.host_digest = "h2";
	cjc_key_direct(&in, b);
	CHECK(strcmp(a, b));
	in.host_digest = "h";
	in.source_sha[0] = 1;
	cjc_key_direct(&in, b);
	CHECK(strcmp(a, b));
	in.source_sha[0] = 0;
	setenv("PTXAS_FLAGS", "", 1);
	cjc_key_direct(&in, b);
	CHECK(strcmp(a, b)); /* set-but-empty differs from unset */
	unsetenv("PTXAS_FLAGS");
	args[2] = "-DA=2";
	cjc_key_direct(&in, b);
	CHECK(strcmp(a, b));

	struct cjc_dep deps[2] = { { .path = "k.cu" }, { .path = "k.h" } };
	struct cjc_manifest_record rec = { .deps = deps, .ndeps = 2 };
	char e1[65], e2[65], e3[65];
	cjc_key_entry(a, &rec, NULL, e1);
	deps[1].sha[5] = 9;
	cjc_key_entry(a, &rec, NULL, e2);
	cjc_strvec_push(&rec.absent, "inc/k.h");
	cjc_key_entry(a, &rec, NULL, e3);
	CHECK(strcmp(e2, e3)); /* the absent candidates are part of the entry key */
	cjc_strvec_clear(&rec.absent);
	CHECK(strcmp(e1, e2));
}

static const char *good_metadata =
	"{\"format\":\"cudajitcache.entry.v1\",\"key\":\"%s\",\"created\":\"2026-01-01T00:00:00Z\","
	"\"files\":{\"output.o\":{\"size\":%s,\"sha256\":\"%s\"}},\"command\":\"nvcc -c k.cu\","
	"\"argv\":[\"nvcc\",\"-c\",\"k.cu\"],\"cwd\":\"/\",\"compiler\":{\"path\":\"nvcc\",\"realpath\":\"/n\","
	"\"version\":\"13\"},\"host_compiler\":{\"path\":\"gcc\",\"version\":\"12\"},\"options\":{},"
	"\"inputs\":[{\"path\":\"k.cu\",\"sha256\":\"x\"}],\"environment\":{},\"target\":null,"
	"\"tool\":{\"name\":\"cudajitcache\",\"version\":\"0\"},\"duration_ms\":5}";

static bool metadata_ok(const char *size, const char *sha)
{
	char key[65];
	memset(key, 'a', 64);
	key[64] = '\0';
	char *text = cjc_xasprintf(good_metadata, key, size, sha);
	struct cjc_buf why = CJC_BUF_INIT;
	json_t *root = cjc_metadata_parse(text, strlen(text), key, &why);
	bool ok = root != NULL;
	if (root)
		json_decref(root);
	cjc_buf_release(&why);
	free(text);
	return ok;
}

static void test_metadata_validator(void)
{
	const char *hex = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
	CHECK(metadata_ok("10", hex));
	CHECK(!metadata_ok("0", hex));
	CHECK(!metadata_ok("-3", hex));
	CHECK(!metadata_ok("true", hex));
	CHECK(!metadata_ok("\"10\"", hex));
	CHECK(!metadata_ok("1.5", hex));
	CHECK(!metadata_ok("10", ""));
	CHECK(!metadata_ok("10", "0123456789ABCDEF0123456789abcdef0123456789abcdef0123456789abcdef"));
	CHECK(!metadata_ok("10", "                                                                "));
	struct cjc_buf why = CJC_BUF_INIT;
	CHECK(cjc_metadata_parse("{", 1, NULL, &why) == NULL && why.len > 0);
	CHECK(cjc_metadata_parse("[]", 2, NULL, &why) == NULL);
	CHECK(cjc_metadata_parse("\"\xff\"", 3, NULL, &why) == NULL);
	cjc_buf_release(&why);
	CHECK(!cjc_artifact_name_ok("../x") && !cjc_artifact_name_ok("metadata.json"));
	CHECK(cjc_artifact_name_ok("output.fatbin"));
}

/* cjc_rfc3339 against gmtime_r and strftime, across leap days, centuries
 * and times before 1970. */
static void test_rfc3339(void)
{
	for (int64_t t = -2208988800LL; t < 4102444800LL; t += 86400 * 3 + 3607) {
		char ours[32], theirs[32];
		time_t tt = (time_t)t;
		struct tm tm;
		gmtime_r(&tt, &tm);
		strftime(theirs, sizeof theirs, "%Y-%m-%dT%H:%M:%SZ", &tm);
		cjc_rfc3339(t, ours);
		CHECK(!strcmp(ours, theirs));
		if (strcmp(ours, theirs))
			break;
	}
}

static void test_depfile(void)
{
	const char *text = "x.o : x.cu \\\n    /a/b.h \\\n    my\\ dir/c.h\n";
	struct cjc_strvec deps = CJC_STRVEC_INIT;
	CHECK(!cjc_depfile_parse(text, strlen(text), &deps));
	CHECK(deps.n == 3 && !strcmp(deps.v[2], "my dir/c.h"));
	struct cjc_buf out = CJC_BUF_INIT;
	cjc_depfile_format(&out, "x.o", deps.v, deps.n, false);
	CHECK(!strcmp(out.data, text));
	cjc_buf_reset(&out);
	cjc_depfile_format(&out, "x.o", deps.v, 2, true);
	CHECK(!strcmp(out.data, "x.o : x.cu \\\n    /a/b.h\n\n/a/b.h:\n"));
	cjc_buf_release(&out);
	cjc_strvec_clear(&deps);
	CHECK(cjc_depfile_parse("no rule here", 12, &deps) == -1);
	cjc_strvec_clear(&deps);
}

/* A packed blob (blob.h) unpacks to its payload; a plain one is left as it
 * is; one cut short, or inflating past the bound, is damaged. */
static void test_packed_blob(const struct cjc_buf *payload)
{
	struct cjc_buf framed = CJC_BUF_INIT, plain = CJC_BUF_INIT, big = CJC_BUF_INIT;
	const void *p;
	size_t n;
	size_t start = cjc_blob_open(&framed, "CJCM");
	for (int i = 0; i < 64; i++) /* repetitive enough to be smaller packed */
		cjc_buf_add(&framed, payload->data, payload->len);
	cjc_blob_close_packed(&framed, start, 1);
	CHECK(!cjc_blob_decode(framed.data, framed.len, "CJCM", &p, &n) && n < payload->len * 64);
	CHECK(!cjc_blob_unpack(p, n, 1 << 20, &plain) && plain.len == payload->len * 64);
	CHECK(!memcmp(plain.data + payload->len * 63, payload->data, payload->len));
	CHECK(cjc_blob_unpack(p, n - 1, 1 << 20, &plain) == -1 && errno == EBADMSG);
	CHECK(cjc_blob_unpack(p, n, payload->len, &plain) == -1);
	CHECK(cjc_blob_unpack(payload->data, payload->len, 1 << 20, &big) == 1 && !big.len);
	cjc_buf_release(&framed);
	cjc_buf_release(&plain);
	cjc_buf_release(&big);
}
static void test_manifest_roundtrip(void)
{
	struct cjc_dep dep = { .path = "k.cu", .size = 42 };
	dep.sha[0] = 7;
	struct cjc_manifest_record rec = { .deps = &dep, .ndeps = 1 };
	memset(rec.entry_key, 'b', 64);
	cjc_strvec_push(&rec.absent, "inc/k.h");
	struct cjc_manifest m = { .recs = &rec, .n = 1 }, back;
	struct cjc_buf payload = CJC_BUF_INIT;
	cjc_manifest_encode(&m, &payload);
	CHECK(!cjc_manifest_decode(payload.data, payload.len, &back));
	CHECK(back.n == 1 && back.recs[0].ndeps == 1 && back.recs[0].deps[0].size == 42);
	CHECK(back.recs[0].absent.n == 1 && !strcmp(back.recs[0].absent.v[0], "inc/k.h"));
	cjc_manifest_release(&back);
	for (size_t cut = 0; cut < payload.len; cut += 7)
		CHECK(cjc_manifest_decode(payload.data, cut, &back) == -1);
	struct cjc_buf framed = CJC_BUF_INIT;
	const void *p;
	size_t n;
	cjc_blob_encode(&framed, "CJCM", payload.data, payload.len);
	CHECK(!cjc_blob_decode(framed.data, framed.len, "CJCM", &p, &n) && n == payload.len);
	framed.data[10] ^= 1;
	CHECK(cjc_blob_decode(framed.data, framed.len, "CJCM", &p, &n) == -1);
	test_packed_blob(&payload);
	cjc_buf_release(&framed);
	cjc_buf_release(&payload);
	cjc_strvec_clear(&rec.absent);
}

/* A temporary name's pid is read in the PID namespace that wrote it: a
 * name of this host from another namespace (a container or `unshare -p`
 * sharing /tmp or the store) whose pid is dead here is another host's,
 * not an orphan, while it is fresh (audit's scratch was removed under a
 * running audit this way). */
static void test_names_of_pid_namespaces(void)
{
	struct stat st;
	char plain[256], other[300], mine[300];
	CHECK(!stat("/proc/self/ns/pid", &st));
	if (gethostname(plain, sizeof plain - 1))
		strcpy(plain, "localhost");
	plain[sizeof plain - 1] = '\0';
	for (char *s = plain; *s; s++)
		if (*s == '/' || *s == '.')
			*s = '_';
	char *ns = cjc_xasprintf("%s_pidns%lu", plain, (unsigned long)st.st_ino);
	CHECK(!strcmp(cjc_hostname(), ns));
	pid_t dead = fork(); /* a pid sure to be dead here */
	if (dead == 0)
		_exit(0);
	CHECK(dead > 0 && waitpid(dead, NULL, 0) == dead);
	snprintf(other, sizeof other, "x.%s.%ld.0123abcd", plain, (long)dead);
	CHECK(!cjc_name_orphaned(other, time(NULL), 3600));
	snprintf(mine, sizeof mine, "x.%s.%ld.0123abcd", ns, (long)dead);
	CHECK(cjc_name_orphaned(mine, time(NULL), 3600));
	free(ns);
}

static void test_sizes(void)
{
	uint64_t v;
	CHECK(!cjc_parse_size("20G", &v) && v == 20ULL << 30);
	CHECK(!cjc_parse_size("512M", &v) && v == 512ULL << 20);
	CHECK(!cjc_parse_size("1000", &v) && v == 1000ULL << 30); /* bare: GiB, as ccache */
	CHECK(!cjc_parse_size("1000B", &v) && v == 1000 && !cjc_parse_size("1.5K", &v) && v == 1536);
	CHECK(!cjc_parse_size("4KiB", &v) && v == 4096);
	CHECK(cjc_parse_size("lots", &v) == -1 && cjc_parse_size("", &v) == -1);
	CHECK(cjc_parse_size("5X", &v) == -1 && cjc_parse_size("-1", &v) == -1);
	int64_t age;
	CHECK(!cjc_parse_age("7d", &age) && age == 7 * 86400);
	CHECK(cjc_parse_age("soon", &age) == -1);
}

static bool spilled(const char *text)
{
	return cjc_diagnostics_spilled(text, strlen(text));
}

static void test_spill_detector(void)
{
	CHECK(spilled("ptxas warning : Registers are spilled to local memory in function 'f', "
		      "8 bytes spill stores, 8 bytes spill loads\n"));
	CHECK(spilled("x\nptxas warning : Local memory used for function 'f', size of stack frame: 16 bytes"));
	CHECK(spilled("    16 bytes stack frame, 4 bytes spill stores, 0 bytes spill loads\n"));
	CHECK(!spilled("    16 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"));
	CHECK(!spilled("ptxas info    : Used 10 registers\nk.cu(3): warning: unused variable\n"));
	CHECK(!spilled(""));
	/* told apart, for the JIT's CHECK_NO_SPILLS and CHECK_NO_LOCAL_MEMORY */
	const char *lmem = "ptxas warning : Local memory used for function 'f', size of stack frame: 16 bytes";
	const char *spill = "    16 bytes stack frame, 4 bytes spill stores, 0 bytes spill loads";
	CHECK(cjc_diagnostics_ptxas(lmem, strlen(lmem)) == CJC_PTXAS_LOCAL_MEMORY);
	CHECK(cjc_diagnostics_ptxas(spill, strlen(spill)) == CJC_PTXAS_SPILLS);
}

/* Names past the cap are added up under "(other)"; --zero empties the file. */
static void test_named_counters(void)
{
	char dir[] = "/tmp/cjc-unit.XXXXXX";
	struct cjc_store s;
	CHECK(mkdtemp(dir) && !cjc_store_open(&s, dir));
	for (int i = 0; i < CJC_STATS_MAX_NAMES + 10; i++) {
		char name[16];
		snprintf(name, sizeof name, "t%03d", i);
		CHECK(!cjc_stats_bump_named(&s, CJC_STATS_BY_TARGET, name, CJC_STAT_HITS, 5));
	}
	struct cjc_stats_row *rows;
	size_t n;
	CHECK(!cjc_stats_read_named(&s, CJC_STATS_BY_TARGET, &rows, &n));
	CHECK(n == CJC_STATS_MAX_NAMES + 1 && !strcmp(rows[0].name, "(other)"));
	CHECK(rows[0].v[CJC_STAT_HITS] == 10 && rows[0].v[CJC_STAT_SAVED_MS] == 50);
	CHECK(!strcmp(rows[1].name, "t000") && rows[1].v[CJC_STAT_HITS] == 1);
	cjc_stats_rows_free(rows, n);
	CHECK(!cjc_stats_zero(&s) && !cjc_stats_read_named(&s, CJC_STATS_BY_TARGET, &rows, &n) && !n);
	cjc_stats_rows_free(rows, n);
	cjc_remove_tree(dir);
	cjc_store_close(&s);
}

/* The one lookup (lookup.h) on its own: a store in a temporary directory,
 * one entry published with its manifest record, and a descriptor whose
 * match and deliver say what the test wants. */
struct lookup_probe {
	long pick;          /* what match answers */
	int answer;         /* what deliver answers when the read succeeds */
	struct cjc_buf got; /* what deliver read */
	uint64_t counts[CJC_STAT_COUNT], saved;
	int notes;
};

static long probe_match(void *ctx, const struct cjc_manifest *m)
{
	const struct lookup_probe *p = ctx;
	return p->pick < (long)m->n ? p->pick : -1;
}

static int probe_deliver(void *ctx, const struct cjc_entry *e, const struct cjc_manifest_record *rec,
			 struct cjc_buf *why)
{
	struct lookup_probe *p = ctx;
	(void)rec;
	cjc_buf_reset(&p->got);
	return cjc_entry_read(e, "output.cubin", &p->got, why) ? -1 : p->answer;
}

static void probe_count(void *events, enum cjc_counter what, uint64_t saved_ms)
{
	struct lookup_probe *p = events;
	p->counts[what]++;
	p->saved += saved_ms;
}

static void probe_note(void *events, const char *line)
{
	(void)line;
	((struct lookup_probe *)events)->notes++;
}

static void quiet(void *ctx, const char *line)
{
	(void)ctx;
	(void)line;
}

/* Publishes output.cubin = bytes under direct with a record naming src. */
static void publish_probe_entry(struct cjc_store *s, const char *direct, const char *src,
				const char *bytes, char key[CJC_HEX_LEN + 1])
{
	struct cjc_dep dep = { (char *)src, 3, { 0 } };
	cjc_hash_buf("abc", 3, dep.sha);
	struct cjc_manifest_record rec = { .deps = &dep, .ndeps = 1 };
	cjc_key_entry(direct, &rec, NULL, rec.entry_key);
	memcpy(key, rec.entry_key, CJC_HEX_LEN + 1);
	char *argv[] = { "nvcc", "--cubin", "k.cu" };
	struct cjc_metadata md = { .argv = argv, .argc = 3, .cwd = "/", .compiler_path = "nvcc",
				   .compiler_realpath = "/nvcc", .compiler_version = "v",
				   .host_path = "gcc", .host_version = "v", .inputs = &dep,
				   .ninputs = 1, .duration_ms = 42 };
	struct cjc_publish p = { .store = s, .key = key, .what = "k.cu", .direct_key = direct,
				 .rec = &rec, .artifact = "output.cubin", .artifact_data = bytes,
				 .artifact_size = strlen(bytes), .md = &md, .note = quiet,
				 .warn = quiet };
	bool won;
	CHECK(cjc_publish(&p, &won) == CJC_PUBLISHED && won);
}

static void test_lookup(void)
{
	char dir[] = "/tmp/cjc-unit.XXXXXX", direct[CJC_HEX_LEN + 1], key[CJC_HEX_LEN + 1];
	struct cjc_store s;
	CHECK(mkdtemp(dir) && !cjc_store_open(&s, dir));
	cjc_hash_buf_hex("direct", 6, direct);
	publish_probe_entry(&s, direct, "/k.cu", "cubin bytes", key);
	struct lookup_probe p = { .pick = 0 };
	struct cjc_lookup_request q = { .store = &s, .direct_key = direct, .touch = true,
					.match = probe_match, .deliver = probe_deliver, .ctx = &p,
					.count = probe_count, .note = probe_note, .events = &p };
	struct cjc_lookup_result r = { 0 };
	CHECK(cjc_lookup_local(&q, &r) == CJC_LOOKUP_HIT && !strcmp(r.entry_key, key));
	CHECK(!strcmp(r.rec.entry_key, key) && r.rec.ndeps == 1 && r.duration_ms == 42);
	CHECK(p.got.len == 11 && !memcmp(p.got.data, "cubin bytes", 11));
	CHECK(p.counts[CJC_STAT_HITS] == 1 && p.saved == 42);
	cjc_lookup_result_release(&r);
	/* no record holds; another direct key; deliver cannot write */
	p.pick = -1;
	CHECK(cjc_lookup_local(&q, &r) == CJC_LOOKUP_NO_MATCH && strstr(r.why, "no entry matches"));
	cjc_lookup_result_release(&r);
	q.direct_key = key;
	CHECK(cjc_lookup_local(&q, &r) == CJC_LOOKUP_NO_MANIFEST && strstr(r.why, "nothing was"));
	cjc_lookup_result_release(&r);
	q.direct_key = direct;
	p.pick = 0;
	p.answer = CJC_LOOKUP_UNWRITTEN;
	CHECK(cjc_lookup_local(&q, &r) == CJC_LOOKUP_NOT_WRITTEN && strstr(r.why, "could not be"));
	CHECK(p.counts[CJC_STAT_HITS] == 1 && !p.counts[CJC_STAT_DAMAGED] && p.notes == 1);
	cjc_lookup_result_release(&r);
	/* bytes changed in the store: damaged, counted, never delivered */
	struct cjc_entry e;
	struct cjc_buf why = CJC_BUF_INIT;
	CHECK(cjc_store_open_entry(&s, key, &e, &why) == CJC_ENTRY_FOUND);
	char *out = cjc_path_join(e.dir, "output.cubin");
	CHECK(!chmod(out, 0644) && !cjc_replace_file(out, "cubin BYTES", 11));
	free(out);
	cjc_entry_release(&e);
	p.answer = 0;
	CHECK(cjc_lookup_local(&q, &r) == CJC_LOOKUP_DAMAGED && strstr(r.why, "was damaged"));
	CHECK(p.counts[CJC_STAT_DAMAGED] == 1 && p.counts[CJC_STAT_HITS] == 1);
	cjc_lookup_result_release(&r);
	/* a record whose entry is not in the store */
	struct cjc_manifest_record gone = { 0 };
	memcpy(gone.entry_key, direct, CJC_HEX_LEN + 1);
	CHECK(cjc_lookup_entry(&q, &gone, &r) == CJC_LOOKUP_ABSENT && strstr(r.why, "no longer"));
	cjc_lookup_result_release(&r);
	CHECK(cjc_lookup_remote(&q, &r) == CJC_LOOKUP_NO_REMOTE);
	cjc_lookup_result_release(&r);
	cjc_buf_release(&why);
	cjc_buf_release(&p.got);
	cjc_remove_tree(dir);
	cjc_store_close(&s);
}

/* A record's members found without parsing the rest; whatever is not one
 * object of members is refused, and nothing is read past its end. */
static void test_journal_skim(void)
{
	const char *line = "{\"time\": \"t\\\"x\", \"facts\": {\"a\": [1, {\"b\": \"}]\"}]},"
			   " \"result\":\"hit\",\"n\":-12e3 , \"result\": \"miss\"}";
	struct cjc_journal_member m[] = { { .name = "result" }, { .name = "n" }, { .name = "time" },
					  { .name = "absent" } };
	CHECK(!cjc_journal_skim(line, strlen(line), m, 4));
	CHECK(m[0].value && m[0].len == 5 && !memcmp(m[0].value, "\"hit\"", 5)); /* the first */
	CHECK(m[1].value && m[1].len == 5 && !memcmp(m[1].value, "-12e3", 5));
	CHECK(m[2].value && m[2].len == 6);
	CHECK(!m[3].value);
	static const char *const bad[] = { "", "[]", "{", "{\"a\"}", "{\"a\":}", "{\"a\":1,}",
					   "{\"a\":\"1}", "{\"a\":{\"b\":[}", "{\"a\":1} x", "{\"a\":1 \"b\":2}" };
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
		CHECK(cjc_journal_skim(bad[i], strlen(bad[i]), m, 4) == -1);
	CHECK(!cjc_journal_skim("{ }", 3, m, 4) && !m[0].value);
	const char *array = "[{\"kind\": \"x]\"}, 2] tail";
	CHECK(cjc_journal_value_len(array, strlen(array)) == strlen(array) - 5);
	CHECK(cjc_journal_value_len(array, 8) == 0 && cjc_journal_value_len("", 0) == 0);
	/* a line cut anywhere is refused, never read past */
	for (size_t n = 0; n < strlen(line); n++) {
		char *cut = cjc_xstrndup(line, n);
		CHECK(cjc_journal_skim(cut, n, m, 4) == -1);
		free(cut);
	}
}

static int count_lines(const char *line, size_t n, void *ctx)
{
	size_t *seen = ctx;
	(void)line;
	seen[0]++;
	seen[1] += n;
	return 0;
}

/* Every user's journal, whatever its size; a line past the bound skipped and
 * counted; a file others can write ignored; the last line without its newline. */
static void test_journal_scan(void)
{
	char dir[] = "/tmp/cjc-unit.XXXXXX";
	struct cjc_store s;
	CHECK(mkdtemp(dir) && !cjc_store_open(&s, dir));
	struct cjc_buf big = CJC_BUF_INIT;
	cjc_buf_adds(&big, "{}\n");
	for (size_t i = 0; i <= CJC_JOURNAL_MAX_LINE; i += 4096) {
		char chunk[4096];
		memset(chunk, 'x', sizeof chunk);
		cjc_buf_add(&big, chunk, sizeof chunk);
	}
	cjc_buf_adds(&big, "\n{\"a\":1}\n{}");
	CHECK(!cjc_store_replace(&s, "journal-123", big.data, big.len));
	CHECK(!cjc_store_replace(&s, "journal-7.1", "{}\n", 3));
	CHECK(!cjc_store_replace(&s, "journal-8", "{}\n", 3));
	CHECK(!cjc_store_replace(&s, "journalx", "{}\n", 3)); /* not a journal's name */
	char *others = cjc_store_path(&s, "journal-8");
	CHECK(!chmod(others, 0666));
	struct cjc_journal_counts counts = { 0 };
	size_t seen[2] = { 0 };
	CHECK(!cjc_journal_scan(&s, count_lines, seen, &counts));
	CHECK(counts.files == 2 && counts.ignored == 1 && counts.skipped == 1);
	CHECK(seen[0] == 4 && counts.lines == 4 && seen[1] == 2 + 7 + 2 + 2);
	CHECK(counts.bytes == big.len + 3);
	free(others);
	cjc_buf_release(&big);
	cjc_remove_tree(dir);
	cjc_store_close(&s);
}

static bool str_is(char *got, const char *want)
{
	bool same = got && want ? !strcmp(got, want) : got == want;
	free(got);
	return same;
}

static void test_place(void)
{
	struct cjc_place none = { .cwd = "/w/build" };
	struct cjc_place base = { .cwd = "/", .base_dir = "/tmp" };
	struct cjc_place lines = { .cwd = "/w/build", .base_dir = "/w", .records_dirs = true };
	CHECK(str_is(cjc_path_normalize("/a/./b/../c//d/"), "/a/c/d"));
	CHECK(str_is(cjc_path_normalize("/../.."), "/"));
	CHECK(str_is(cjc_place_base_dir("/w/x/"), "/w/x") && str_is(cjc_place_base_dir("/"), ""));
	CHECK(cjc_place_base_dir("w/x") == NULL);
	/* keyed by where they resolve, unnormalised, as -lineinfo records them */
	CHECK(str_is(cjc_place_resolve(&none, "../inc"), "/w/build/../inc"));
	CHECK(cjc_place_resolve(&none, "/abs/inc") == NULL);
	CHECK(cjc_place_relativize(&none, "/w/src/k.cu") == NULL);
	/* under base_dir: written relative, keyed as written unless directories are recorded */
	CHECK(str_is(cjc_place_relativize(&base, "/tmp"), "tmp"));
	CHECK(cjc_place_relativize(&base, "/usr/include") == NULL);
	CHECK(cjc_place_resolve(&base, "tmp/x") == NULL);
	CHECK(str_is(cjc_place_resolve(&base, "usr/x"), "//usr/x"));
	CHECK(str_is(cjc_place_resolve(&lines, "../inc"), "/w/build/../inc"));
	/* -g's working directory mapped away */
	CHECK(cjc_place_maps_cwd("-fPIC,-fdebug-prefix-map=/w=.", "/w/build"));
	CHECK(cjc_place_maps_cwd("-ffile-prefix-map=/w/build=/b", "/w/build"));
	CHECK(cjc_place_maps_cwd("-fdebug-compilation-dir=.", "/w/build"));
	CHECK(!cjc_place_maps_cwd("-fdebug-prefix-map=/elsewhere=.", "/w/build"));
	CHECK(!cjc_place_maps_cwd("-fdebug-prefix-map=/w", "/w/build"));
}

/* Path-free keys (place.h): the root, a path's key form, a record moved
 * between roots, the rules over headers and outputs, the parse's path
 * words, and the manifest's root and exact flag. */
static void test_path_free(void)
{
	CHECK(str_is(cjc_place_root("/t/pip-A/build", "/t/pip-A/src/k.cu"), "/t/pip-A"));
	CHECK(str_is(cjc_place_root("/t/pip-A", "k.cu"), "/t/pip-A"));
	CHECK(str_is(cjc_place_root("/t/pip-AB", "/t/pip-A/k.cu"), "/t"));
	CHECK(cjc_place_root("/home/u", "/t/k.cu") == NULL);
	struct cjc_place at = { .cwd = "/t/A/build", .root = "/t/A" };
	CHECK(str_is(cjc_place_key_path(&at, "/t/A/inc/h.h"), "<root>/inc/h.h"));
	CHECK(str_is(cjc_place_key_path(&at, "../inc/h.h"), "<root>/build/../inc/h.h"));
	CHECK(cjc_place_key_path(&at, "/t/AB/h.h") == NULL);
	CHECK(str_is(cjc_place_rebase("/t/A/inc/h.h", "/t/A", "/u/B"), "/u/B/inc/h.h"));
	CHECK(cjc_place_rebase("/usr/include/x.h", "/t/A", "/u/B") == NULL);
	/* __FILE__ in a header keyed relative reaches the output; in one kept exact, not */
	struct cjc_buf t[2] = { CJC_BUF_INIT, CJC_BUF_INIT };
	cjc_buf_adds(&t[0], "int f();\n");
	cjc_buf_adds(&t[1], "inline const char *g() { return __FILE__; }\n");
	bool relocated[] = { true, true }, system[] = { true, false };
	CHECK(cjc_rules_paths_reach(t, 2, relocated, "-O3\n", 4));
	CHECK(!cjc_rules_paths_reach(t, 2, system, "-O3\n", 4));
	cjc_buf_release(&t[0]);
	cjc_buf_release(&t[1]);
	/* preprocessed text: a name outside directives, or __builtin_FILE */
	char *names[] = { "k.cu" };
	const char pre[] = "# 1 \"k.cu\"\n#define W __FILE__\nint x;\n";
	CHECK(!cjc_rules_preprocessed_names(pre, strlen(pre), names, 1));
	CHECK(cjc_rules_preprocessed_names("p = \"/a/k.cu\";\n", 14, names, 1));
	CHECK(cjc_rules_preprocessed_names("p = __builtin_FILE();", 21, names, 1));
	const char named[] = "x _ZN32_INTERNAL_c797083e_4_k_cu y", other[] = "x _INTERNAL_ y";
	CHECK(cjc_rules_output_names_path(named, sizeof named));
	CHECK(!cjc_rules_output_names_path(other, sizeof other));
	/* a fatbin whose one entry is stored compressed in a way not known */
	unsigned char fat[16 + 64] = { 0x50, 0xed, 0x55, 0xba, 1, 0, 16, 0, 64 };
	fat[16 + 4] = 64;
	fat[16 + 40] = 0x00, fat[16 + 41] = 0x20;
	CHECK(cjc_rules_output_names_path(fat, sizeof fat));
	fat[16 + 41] = 0;
	CHECK(!cjc_rules_output_names_path(fat, sizeof fat));
	/* the parse's path words move under the root; a -D value keeps its path */
	char *argv[] = { "-c",       "/t/A/k.cu",  "-I/t/A/inc", "-I",
			 "/usr/inc", "-DDIR=/t/A", "-o",         "k.o" };
	struct cjc_compile c;
	cjc_compile_parse(8, argv, &at, &c);
	cjc_compile_set_root(&c, "/t/A");
	CHECK(cjc_strvec_contains(&c.key_args, "<root>/k.cu"));
	CHECK(cjc_strvec_contains(&c.key_args, "-I<root>/inc"));
	CHECK(cjc_strvec_contains(&c.key_args, "/usr/inc") &&
	      cjc_strvec_contains(&c.key_args, "-DDIR=/t/A"));
	CHECK(cjc_strvec_contains(&c.key_args, "cjc:root"));
	cjc_compile_release(&c);
}

/* A fatbin of one entry: payload stored zstd-compressed, recorded as full
 * bytes once inflated. */
static void fatbin_of(const struct cjc_buf *payload, uint64_t full, struct cjc_buf *fat)
{
	unsigned char head[16 + 64] = { 0x50, 0xed, 0x55, 0xba, 1, 0, 16 };
	uint64_t size = 64 + payload->len;
	memcpy(head + 8, &size, 8);
	head[16 + 4] = 64;
	memcpy(head + 16 + 8, &payload->len, 8);
	memcpy(head + 16 + 16, &payload->len, 4);
	head[16 + 41] = 0x80; /* zstd */
	memcpy(head + 16 + 56, &full, 8);
	cjc_buf_reset(fat);
	cjc_buf_add(fat, head, sizeof head);
	cjc_buf_add(fat, payload->data, payload->len);
}

/* The PTX nvcc stores zstd-compressed is read inflated (compress.h), never
 * past the size its entry records. */
static void test_fatbin_zstd(void)
{
	struct cjc_buf ptx = CJC_BUF_INIT, frame = CJC_BUF_INIT, fat = CJC_BUF_INIT;
	unsigned seed = 1;
	for (int i = 0; i < 4096; i++)
		cjc_buf_addf(&ptx, "%c", 'a' + (seed = seed * 1103515245 + 12345) % 23);
	memcpy(ptx.data + 2000, "_INTERNAL_c797083e_", 19);
	CHECK(!cjc_compress(ptx.data, ptx.len, 1, &frame));
	CHECK(!memmem(frame.data, frame.len, "_INTERNAL_", 10)); /* only inflated is it seen */
	fatbin_of(&frame, ptx.len, &fat);
	CHECK(cjc_rules_output_names_path(fat.data, fat.len));
	memcpy(ptx.data + 2000, "_EXTERNAL_", 10);
	CHECK(!cjc_compress(ptx.data, ptx.len, 1, &frame));
	fatbin_of(&frame, ptx.len, &fat);
	CHECK(!cjc_rules_output_names_path(fat.data, fat.len));
	fatbin_of(&frame, ptx.len - 1, &fat); /* more than recorded: not read */
	CHECK(cjc_rules_output_names_path(fat.data, fat.len));
	cjc_buf_release(&ptx);
	cjc_buf_release(&frame);
	cjc_buf_release(&fat);
}

static void test_manifest_place(void)
{
	struct cjc_dep dep = { .path = "/t/A/k.cu", .size = 1 };
	struct cjc_manifest_record rec = {
		.deps = &dep, .ndeps = 1, .root = "/t/A", .exact = true
	};
	memset(rec.entry_key, 'c', 64);
	struct cjc_manifest m = { .recs = &rec, .n = 1 }, back;
	struct cjc_buf payload = CJC_BUF_INIT;
	cjc_manifest_encode(&m, &payload);
	CHECK(!cjc_manifest_decode(payload.data, payload.len, &back));
	CHECK(back.n == 1 && str_is(cjc_xstrdup(back.recs[0].root), "/t/A") && back.recs[0].exact);
	/* exact: the entry key holds the root, so another place names another entry */
	struct cjc_place a = { .cwd = "/t/A", .root = "/t/A", .source = "/t/A/k.cu" };
	struct cjc_place b = { .cwd = "/u/B", .root = "/u/B", .source = "/u/B/k.cu" };
	char ka[CJC_HEX_LEN + 1], kb[CJC_HEX_LEN + 1], kb2[CJC_HEX_LEN + 1];
	cjc_key_entry("d", &back.recs[0], &a, ka);
	back.recs[0].deps[0].path[1] = 'u', back.recs[0].deps[0].path[3] = 'B';
	cjc_key_entry("d", &back.recs[0], &b, kb);
	CHECK(strcmp(ka, kb) != 0);
	back.recs[0].exact = false;
	cjc_key_entry("d", &back.recs[0], &b, kb);
	back.recs[0].deps[0].path[1] = 't', back.recs[0].deps[0].path[3] = 'A';
	cjc_key_entry("d", &back.recs[0], &a, kb2);
	CHECK(!strcmp(kb, kb2));
	cjc_manifest_release(&back);
	/* version 1, without root and flags, still reads */
	((unsigned char *)payload.data)[0] = 1;
	payload.len -= 4 + strlen("/t/A") + 4; /* the root, with its length, and the flags */
	CHECK(!cjc_manifest_decode(payload.data, payload.len, &back) && !back.recs[0].root);
	cjc_manifest_release(&back);
	cjc_buf_release(&payload);
}

/* The uncacheable reason of a compile of a.cu with the given words (NULL:
 * cacheable); *native says whether it names -arch=native.  malloc'd. */
static char *reason_with(char *const *words, bool *native)
{
	struct cjc_strvec argv = CJC_STRVEC_INIT;
	cjc_strvec_push(&argv, "-c");
	cjc_strvec_push(&argv, "a.cu");
	for (char *const *w = words; *w; w++)
		cjc_strvec_push(&argv, *w);
	struct cjc_compile c;
	cjc_compile_parse((int)argv.n, argv.v, NULL, &c);
	char *reason = c.uncacheable ? cjc_xstrdup(c.uncacheable) : NULL;
	if (native)
		*native = c.native_arch;
	cjc_compile_release(&c);
	cjc_strvec_clear(&argv);
	return reason;
}

static bool host_program_refused(char *const *words)
{
	char *reason = reason_with(words, NULL);
	bool refused = reason && strstr(reason, "host-compiler option names a program");
	free(reason);
	return refused;
}

static void test_host_program_options(void)
{
	static char *const refused[][4] = {
		{ "-Xcompiler", "-B/x" }, { "-Xcompiler=-B/x" }, { "--compiler-options=-B/x" },
		{ "-Xcompiler", "-Wall,-B/x" }, { "-Xcompiler", "-O2 -B /x" }, { "-Xcompiler", "-specs=/x" },
		{ "-Xcompiler", "--specs=/x" }, { "-Xcompiler", "-fplugin=/x.so" },
		{ "-Xcompiler", "-fplugin-arg-x-y=1,-fplugin=/x.so" }, { "-Xcompiler", "-wrapper,gdb" },
		{ "-Xcompiler", "-iplugindir=/x" }, { "-Xcompiler", "@opts" },
		{ "-forward-unknown-to-host-compiler", "-B/x" }, { "-forward-unknown-to-host-compiler", "-specs=/x" },
	};
	for (size_t i = 0; i < sizeof refused / sizeof *refused; i++) {
		bool ok = host_program_refused(refused[i]);
		if (!ok)
			fprintf(stderr, "expected refused: %s %s\n", refused[i][0], refused[i][1] ? refused[i][1] : "");
		CHECK(ok);
	}
	static char *const kept[][4] = {
		{ "-Xcompiler", "-fPIC,-Wall" }, { "-Xcompiler", "-fdebug-prefix-map=/a/b=." },
		{ "-Xcompiler", "-O2 -fopenmp" }, { "-DB=1" },
	};
	for (size_t i = 0; i < sizeof kept / sizeof *kept; i++) {
		char *reason = reason_with(kept[i], NULL);
		CHECK(!reason);
		free(reason);
	}
	const char *names = NULL;
	CHECK(!strcmp(cjc_host_program_option("-x,-B/y", &names), "-B") && strstr(names, "directory"));
	CHECK(cjc_host_program_option("-fPIC", NULL) == NULL);
	setenv("NVCC_APPEND_FLAGS", "-O2 -Xcompiler -B/x", 1);
	CHECK(host_program_refused((char *const[]){ NULL }));
	unsetenv("NVCC_APPEND_FLAGS");
}

static void test_native_arch(void)
{
	static char *const native[][4] = {
		{ "-arch=native" }, { "-arch", "native" }, { "--gpu-architecture=native" },
		{ "-gencode", "arch=compute_80,code=native" }, { "-code=sm_80,native" },
	};
	for (size_t i = 0; i < sizeof native / sizeof *native; i++) {
		bool is_native = false;
		char *reason = reason_with(native[i], &is_native);
		CHECK(is_native && reason && strstr(reason, "-arch=native, not resolved"));
		free(reason);
	}
	bool is_native = true;
	char *reason = reason_with((char *const[]){ "-arch=sm_80", "-DNATIVE=native_x", NULL }, &is_native);
	CHECK(!is_native && !reason);
	free(reason);
	setenv("NVCC_PREPEND_FLAGS", "-arch=native", 1);
	reason = reason_with((char *const[]){ NULL }, &is_native);
	CHECK(is_native && reason);
	free(reason);
	unsetenv("NVCC_PREPEND_FLAGS");

	struct cjc_buf archs = CJC_BUF_INIT;
	CHECK(!cjc_native_parse("80", &archs) && !strcmp(archs.data, "sm_80"));
	cjc_buf_reset(&archs);
	CHECK(!cjc_native_parse("80,90,", &archs) && !strcmp(archs.data, "sm_80,sm_90"));
	static const char *const malformed[] = { "", ",", "80\n", "sm_80", "8.0", "80 90" };
	for (size_t i = 0; i < sizeof malformed / sizeof *malformed; i++) {
		cjc_buf_reset(&archs);
		CHECK(cjc_native_parse(malformed[i], &archs) == -1);
	}
	cjc_buf_release(&archs);

	/* no __nvcc_device_query beside this "nvcc": uncacheable, saying so */
	struct cjc_compile c;
	parse(&c, "--cubin a.cu -arch=native");
	cjc_compile_resolve_native(&c, "/nonexistent/bin/nvcc");
	CHECK(c.uncacheable && strstr(c.uncacheable, "names no GPU"));
	cjc_compile_release(&c);
}

/* A worker that waits until the test has looked at it. */
static void *wait_to_be_seen(void *arg)
{
	pthread_barrier_wait(arg);
	return arg;
}

/* base/util.h: cjc_printable escapes what could move or hide text on a
 * terminal, and no other character. */
static void test_printable(void)
{
	static const struct { const char *in, *out; } cases[] = {
		{ "plain \xc3\xa9 \xf0\x9f\x98\x80 \\x", "plain \xc3\xa9 \xf0\x9f\x98\x80 \\x" },
		{ "\x1b[2J\a\x7f\n", "\\x1b[2J\\x07\\x7f\\x0a" },
		{ "\xc2\x9b" "31m", "\\u{009b}31m" },				/* C1 CSI */
		{ "a\xe2\x80\xae" "b\xe2\x81\xa6" "c\xd8\x9c\xe2\x80\x8f", "a\\u{202e}b\\u{2066}c\\u{061c}\\u{200f}" },
		{ "\xc0\xaf\xed\xa0\x80\xe2\x80", "\\xc0\\xaf\\xed\\xa0\\x80\\xe2\\x80" }, /* overlong, surrogate, cut */
		{ "\xf4\x90\x80\x80\xff", "\\xf4\\x90\\x80\\x80\\xff" },	/* past U+10FFFF */
	};
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		char *shown = cjc_printable(cases[i].in);
		CHECK(!strcmp(shown, cases[i].out));
		free(shown);
	}
}

/* base/thread.h: the worker runs fn(arg) and returns its value to the
 * join; once started (away from this CPU, where there is another), it may
 * run on all of this thread's CPUs again. */
static void test_thread_start(void)
{
	cpu_set_t mine, its;
	pthread_barrier_t seen;
	pthread_t t;
	void *back = NULL;
	CHECK(!sched_getaffinity(0, sizeof mine, &mine));
	CHECK(!pthread_barrier_init(&seen, NULL, 2));
	CHECK(!cjc_thread_start(&t, wait_to_be_seen, &seen));
	CHECK(!pthread_getaffinity_np(t, sizeof its, &its));
	CHECK(CPU_EQUAL(&its, &mine));
	pthread_barrier_wait(&seen);
	CHECK(!pthread_join(t, &back));
	CHECK(back == &seen);
	pthread_barrier_destroy(&seen);
}

int main(void)
{
	test_option_table_sorted();
	test_env_table();
	test_rules();
	test_rules_expanded();
	test_rules_unlisted();
	test_fatbin_zstd();
	test_option_lookups();
	test_parse_compiles();
	test_parse_uncacheable();
	test_host_program_options();
	test_native_arch();
	test_keys();
	test_metadata_validator();
	test_rfc3339();
	test_depfile();
	test_manifest_roundtrip();
	test_sizes();
	test_names_of_pid_namespaces();
	test_spill_detector();
	test_named_counters();
	test_lookup();
	test_journal_skim();
	test_journal_scan();
	test_place();
	test_path_free();
	test_manifest_place();
	test_thread_start();
	test_printable();
#ifdef CJC_HAVE_CURL
	test_oci_manifest();
#endif
	printf("%d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}

#ifdef CJC_HAVE_CURL
static void test_oci_embedded(const char *hello);
static void test_oci_deflated(const char *hello);
static void test_oci_budget(void);
/* The OCI backend's manifest parser (remote_oci.c): the value and its
 * layer checked, anything else refused, every truncation refused. */
static int oci_value(const char *text, size_t len, char kind, size_t max, struct cjc_buf *out)
{
	char hex[CJC_HEX_LEN + 1];
	uint64_t size;
	struct cjc_buf why = CJC_BUF_INIT;
	cjc_buf_reset(out);
	int rc = cjc_oci_manifest_value(text, len, kind, max, out, hex, &size, NULL, NULL, &why);
	cjc_buf_release(&why);
	return rc;
}

static void test_oci_manifest(void)
{
	struct cjc_buf b = CJC_BUF_INIT, out = CJC_BUF_INIT;
	const char *bad64[] = { "abc", "a===", "ab=c", "====", "ab c", "YQ==YQ==", "Y===" };
	for (size_t i = 0; i < sizeof bad64 / sizeof *bad64; i++)
		CHECK(cjc_base64_decode(bad64[i], strlen(bad64[i]), &b) == -1);
	for (size_t n = 0; n < 7; n++) {
		cjc_buf_reset(&b);
		cjc_buf_reset(&out);
		cjc_base64_encode("\xff\x00\x80hello", n, &b);
		CHECK(!cjc_base64_decode(b.data, b.len, &out) && out.len == n &&
		      !memcmp(out.data, "\xff\x00\x80hello", n));
	}
	char hex[CJC_HEX_LEN + 1], *text;
	cjc_hash_buf_hex("hello", 5, hex);
	const char *fmt = "{\"schemaVersion\":2,\"mediaType\":\"application/vnd.oci.image.manifest.v1+json\","
			  "\"artifactType\":\"application/vnd.cudajitcache.%s.v1\",\"config\":{},"
			  "\"layers\":[{\"mediaType\":\"application/vnd.cudajitcache.%s.v1\","
			  "\"digest\":\"sha256:%s\",\"size\":%d%s}]}";
	text = cjc_xasprintf(fmt, "entry", "record", hex, 5, ",\"data\":\"aGVsbG8=\"");
	CHECK(oci_value(text, strlen(text), 'e', 100, &out) == 0 && out.len == 5 &&
	      !memcmp(out.data, "hello", 5));
	CHECK(oci_value(text, strlen(text), 'm', 100, &out) == -1); /* another kind */
	CHECK(oci_value(text, strlen(text), 'e', 4, &out) == -1);   /* past the bound */
	for (size_t n = 0; n < strlen(text); n++)                   /* every truncation */
		CHECK(oci_value(text, n, 'e', 100, &out) == -1);
	free(text);
	text = cjc_xasprintf(fmt, "manifest", "manifest", hex, 5, "");
	CHECK(oci_value(text, strlen(text), 'm', 100, &out) == 1); /* the blob must be fetched */
	free(text);
	text = cjc_xasprintf(fmt, "entry", "record", hex, 5, ",\"data\":\"aGVsbG9=\""); /* not canonical */
	CHECK(oci_value(text, strlen(text), 'e', 100, &out) == -1);
	free(text);
	text = cjc_xasprintf(fmt, "entry", "record", hex, 5, ",\"data\":\"aGVsbHA=\""); /* other bytes */
	CHECK(oci_value(text, strlen(text), 'e', 100, &out) == -1);
	free(text);
	text = cjc_xasprintf(fmt, "entry", "record", hex, 6, ",\"data\":\"aGVsbG8=\""); /* other size */
	CHECK(oci_value(text, strlen(text), 'e', 100, &out) == -1);
	free(text);
	text = cjc_xasprintf(fmt, "entry", "record", "00", 5, ",\"data\":\"aGVsbG8=\""); /* bad digest */
	CHECK(oci_value(text, strlen(text), 'e', 100, &out) == -1);
	free(text);
	text = cjc_xasprintf(fmt, "entry", "record", hex, 5, ",\"data\":\"aGVsbG8=\",\"size\":5");
	CHECK(oci_value(text, strlen(text), 'e', 100, &out) == -1); /* a duplicate key */
	free(text);
	test_oci_embedded(hex);
	test_oci_deflated(hex);
	test_oci_budget();
	test_oci_challenge();
	cjc_buf_release(&b);
	cjc_buf_release(&out);
}

/* Values embedded after the first: each whose bytes are what its layer
 * says is passed on, any other is not; ctx counts artifacts, then records. */
static void count_embedded(const char *hex, const char *entry_key, const void *p, size_t n,
			   void *ctx)
{
	char got[CJC_HEX_LEN + 1];
	CHECK(!entry_key || cjc_is_hex64(entry_key));
	if (!p) { /* named, not embedded: what the reader fetches beside the value */
		CHECK(cjc_is_hex64(hex) && n == 5);
		++((int *)ctx)[2];
		return;
	}
	cjc_hash_buf_hex(p, n, got);
	CHECK(!strcmp(got, hex));
	++((int *)ctx)[entry_key != NULL];
}

static void test_oci_embedded(const char *hello)
{
	char world[CJC_HEX_LEN + 1];
	cjc_hash_buf_hex("world", 5, world);
	const char *layer = "{\"mediaType\":\"application/vnd.cudajitcache.%s.v1\","
			    "\"digest\":\"sha256:%s\",\"size\":5,\"data\":\"%s\"%s}";
	const char *keyed = ",\"annotations\":{\"org.cudajitcache.entry\":\"%s\"}";
	char *as_key = cjc_xasprintf(keyed, world), *no_key = cjc_xasprintf(keyed, "x");
	char *value = cjc_xasprintf(layer, "record", hello, "aGVsbG8=", "");
	char *good = cjc_xasprintf(layer, "artifact", world, "d29ybGQ=", "");
	char *lying = cjc_xasprintf(layer, "artifact", world, "aGVsbG8=", ""); /* hello's bytes */
	char *entry = cjc_xasprintf(layer, "record", world, "d29ybGQ=", as_key);
	char *nameless = cjc_xasprintf(layer, "record", world, "d29ybGQ=", no_key);
	char *named = cjc_xasprintf("{\"mediaType\":\"application/vnd.cudajitcache.artifact.v1\","
				    "\"digest\":\"sha256:%s\",\"size\":5}", world); /* a blob only */
	const char *fmt = "{\"schemaVersion\":2,\"mediaType\":\"application/vnd.oci.image."
			  "manifest.v1+json\",\"artifactType\":\"application/vnd.cudajitcache."
			  "%s.v1\",\"config\":{},\"layers\":[%s,%s,%s,%s,%s,%s]}";
	char *text = cjc_xasprintf(fmt, "entry", value, good, lying, entry, nameless, named);
	struct cjc_buf out = CJC_BUF_INIT, why = CJC_BUF_INIT;
	char hex[CJC_HEX_LEN + 1];
	uint64_t size;
	int passed_on[3] = { 0, 0, 0 };
	CHECK(cjc_oci_manifest_value(text, strlen(text), 'e', 100, &out, hex, &size, count_embedded,
				     passed_on, &why) == 0);
	CHECK(passed_on[0] == 1 && passed_on[1] == 0); /* an entry's manifest embeds no entry */
	CHECK(passed_on[2] == 1);
	free(value);
	free(text);
	/* a direct-mode manifest: its newest entry's record, named by its key */
	value = cjc_xasprintf(layer, "manifest", hello, "aGVsbG8=", "");
	text = cjc_xasprintf(fmt, "manifest", value, good, lying, entry, nameless, named);
	passed_on[0] = passed_on[1] = passed_on[2] = 0;
	cjc_buf_reset(&out);
	CHECK(cjc_oci_manifest_value(text, strlen(text), 'm', 100, &out, hex, &size, count_embedded,
				     passed_on, &why) == 0);
	CHECK(passed_on[0] == 1 && passed_on[1] == 1 && passed_on[2] == 1);
	char *parts[] = { as_key, no_key, value, good, lying, entry, nameless, named, text };
	for (size_t i = 0; i < sizeof parts / sizeof *parts; i++)
		free(parts[i]);
	cjc_buf_release(&out);
	cjc_buf_release(&why);
}
/* base64 of n bytes of p deflated (zlib), with extra bytes after the
 * stream; malloc'd. */
static char *deflated64(const void *p, size_t n, const char *extra)
{
	uLongf zn = compressBound(n) + strlen(extra);
	unsigned char *z = malloc(zn);
	CHECK(compress2(z, &zn, p, n, 9) == Z_OK);
	memcpy(z + zn, extra, strlen(extra));
	struct cjc_buf text = CJC_BUF_INIT;
	cjc_base64_encode(z, zn + strlen(extra), &text);
	free(z);
	return text.data;
}

/* A value embedded as this writes it: deflated and base64'd in our
 * annotation; taken when it inflates to exactly what its layer says, and
 * refused when it inflates to more (a bomb: no more than the layer's size
 * is ever inflated), to less, or to other bytes, when bytes follow the
 * stream, or when a layer embeds in both ways. */
static void test_oci_deflated(const char *hello)
{
	static char zeros[1 << 20];
	char *good = deflated64("hello", 5, ""), *bomb = deflated64(zeros, sizeof zeros, "");
	char *trailing = deflated64("hello", 5, "x"), *other = deflated64("hellp", 5, "");
	char *shorter = deflated64("hell", 4, "");
	char *damaged = cjc_xstrdup(good);
	damaged[strlen(damaged) / 2] = damaged[strlen(damaged) / 2] == 'A' ? 'B' : 'A';
	const char *fmt = "{\"schemaVersion\":2,\"mediaType\":\"application/vnd.oci.image.manifest.v1+json\","
			  "\"artifactType\":\"application/vnd.cudajitcache.entry.v1\",\"config\":{},"
			  "\"layers\":[{\"mediaType\":\"application/vnd.cudajitcache.record.v1\","
			  "\"digest\":\"sha256:%s\",\"size\":5%s,\"annotations\":"
			  "{\"org.cudajitcache.deflate\":\"%s\"}}]}";
	struct { const char *z, *data; int want; } cases[] = {
		{ good, "", 0 },       { bomb, "", -1 },	{ trailing, "", -1 },
		{ other, "", -1 },     { shorter, "", -1 }, { damaged, "", -1 },
		{ "aGVsbG8=", "", -1 }, /* not deflated */
		{ good, ",\"data\":\"aGVsbG8=\"", -1 },
	};
	struct cjc_buf out = CJC_BUF_INIT;
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		char *text = cjc_xasprintf(fmt, hello, cases[i].data, cases[i].z);
		int rc = oci_value(text, strlen(text), 'e', 100, &out);
		CHECK(rc == cases[i].want);
		CHECK(rc || (out.len == 5 && !memcmp(out.data, "hello", 5)));
		free(text);
	}
	char *parts[] = { good, bomb, trailing, other, shorter, damaged };
	for (size_t i = 0; i < sizeof parts / sizeof *parts; i++)
		free(parts[i]);
	cjc_buf_release(&out);
}

/* A layer of n bytes of p, deflated, whose digest is p's (or, lying, the
 * string other's). */
static char *deflated_layer(const char *type, const void *p, size_t n, const char *other)
{
	char hex[CJC_HEX_LEN + 1];
	cjc_hash_buf_hex(other ? other : p, other ? strlen(other) : n, hex);
	char *z = deflated64(p, n, "");
	char *layer = cjc_xasprintf("{\"mediaType\":\"application/vnd.cudajitcache.%s.v1\","
				    "\"digest\":\"sha256:%s\",\"size\":%zu,\"annotations\":"
				    "{\"org.cudajitcache.deflate\":\"%s\"}}", type, hex, n, z);
	free(z);
	return layer;
}

/* The artifacts an entry's manifest of these layers passes on. */
static int passed_on(const char *first, const char *second, const char *third)
{
	char *text = cjc_xasprintf("{\"schemaVersion\":2,\"mediaType\":\"application/vnd.oci.image."
				   "manifest.v1+json\",\"artifactType\":\"application/vnd."
				   "cudajitcache.entry.v1\",\"config\":{},\"layers\":[%s,%s%s%s]}",
				   first, second, third ? "," : "", third ? third : "");
	struct cjc_buf out = CJC_BUF_INIT, why = CJC_BUF_INIT;
	char hex[CJC_HEX_LEN + 1];
	uint64_t size;
	int counts[2] = { 0, 0 };
	CHECK(cjc_oci_manifest_value(text, strlen(text), 'e', CJC_OCI_EMBED_MAX, &out, hex, &size,
				     count_embedded, counts, &why) == 0);
	free(text);
	cjc_buf_release(&out);
	cjc_buf_release(&why);
	return counts[0];
}

/* What a manifest embeds is inflated up to CJC_OCI_EMBED_MAX in all: the
 * value's bytes count, and so does a layer whose bytes prove wrong (else
 * a registry could make a reader inflate that much again for each such
 * layer, hundreds in one manifest). */
static void test_oci_budget(void)
{
	static char zeros[CJC_OCI_EMBED_MAX];
	size_t most = CJC_OCI_EMBED_MAX - 4; /* leaves room for 4 bytes, not 5 */
	char *hello = deflated_layer("record", "hello", 5, NULL);
	char *world = deflated_layer("artifact", "world", 5, NULL);
	char *big = deflated_layer("record", zeros, most, NULL);
	char *lying = deflated_layer("artifact", zeros, most - 5, "x");
	CHECK(passed_on(hello, world, NULL) == 1);
	CHECK(passed_on(big, world, NULL) == 0);	 /* the value took the room */
	CHECK(passed_on(hello, lying, world) == 0); /* so did the refused layer */
	char *parts[] = { hello, world, big, lying };
	for (size_t i = 0; i < sizeof parts / sizeof *parts; i++)
		free(parts[i]);
}

/* A challenge's parameters, quoted or in the token form, never a name
 * that only ends like the one asked for. */
static void test_oci_challenge(void)
{
	static const struct {
		const char *challenge, *name, *want;
	} cases[] = {
		{ "Bearer realm=\"https://a/token\",service=\"reg\"", "realm", "https://a/token" },
		{ "Bearer realm=\"https://a/token\",service=\"reg\"", "service", "reg" },
		{ "Bearer realm=https://a/token,service=reg,scope=\"repository:x:pull\"", "realm",
		  "https://a/token" },
		{ "Bearer realm=https://a/token, service=reg", "service", "reg" },
		{ "Bearer xrealm=\"https://evil\",realm=\"https://a\"", "realm", "https://a" },
		{ "Bearer realm=\"https://a", "realm", NULL },
		{ "Bearer realm=,service=reg", "realm", NULL },
		{ "Bearer service=reg", "realm", NULL },
	};
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		char *got = cjc_oci_challenge_param(cases[i].challenge, cases[i].name);
		CHECK(cases[i].want ? got && !strcmp(got, cases[i].want) : !got);
		free(got);
	}
}
#endif
