#!/usr/bin/env python3
"""Regenerates tests/corpus/matrix/: malformed and hostile test matrices that the loader must
refuse, plus expected.tsv (file, a part its error message must contain).

Run from anywhere: python3 tests/corpus/make_matrix_corpus.py. Deterministic; rewrites the
directory. Inputs the loader accepts (huge k·n below 2^60, a UTF-8 BOM before a valid matrix,
duplicate object keys, a NUL byte after a valid matrix) do not belong here: they are refused at run time or not at all.
"""
import json
import os
import random
import shutil

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "matrix")

SYNTAX = "invalid JSON at byte"
INT_MAX = 2**31 - 1

files = {}  # name -> (bytes, expected substring)


def add(name, data, expect):
    assert name not in files, name
    if isinstance(data, str):
        data = data.encode("utf-8")
    files[name + ".json"] = (data, expect)


def dump(obj):
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False)


DROP = object()     # leave the field out
DEFAULT = object()  # the template's value


def case(**over):
    c = {"id": 0, "k": 3, "m": 4, "n": 16}
    for key, v in over.items():
        if v is DROP:
            c.pop(key)
        else:
            c[key] = v
    return c


def matrix(cases=DEFAULT, **top):
    mx = {"schema_version": 1, "cases": [case()] if cases is DEFAULT else cases}
    if cases is DROP:
        mx.pop("cases")
    for key, v in top.items():
        if v is DROP:
            mx.pop(key)
        else:
            mx[key] = v
    return mx


def raw_case_field(field, literal):
    """A matrix whose first case sets `field` to a raw JSON literal (kept byte for byte)."""
    c = case()
    c.pop(field, None)
    body = dump(c)[1:-1]
    return '{"schema_version":1,"cases":[{%s,"%s":%s}]}' % (body, field, literal)


# ---------------------------------------------------------------- truncated JSON
full = dump(matrix(
    description="a full matrix",
    defaults={"topk": 2, "distribution": "clusters", "seed": 7},
    cases=[case(id=0, groups=["ta", "small"], description="first"),
           case(id=1, k=16, m=1024, n=65536, topk=4, distribution="duplicates", seed=11)]))
cuts = sorted(set(int(len(full) * i / 40) for i in range(1, 40)))
for i, cut in enumerate(cuts):
    add("truncated_%02d" % i, full[:cut], SYNTAX)
add("truncated_mid_escape", '{"schema_version":1,"description":"ab\\u00', SYNTAX)
add("truncated_mid_utf8", b'{"schema_version":1,"description":"\xc3', SYNTAX)
add("truncated_mid_number", '{"schema_version":1,"cases":[{"id":0,"k":1e', SYNTAX)
add("truncated_mid_literal", '{"schema_version":1,"cases":[{"id":0,"k":tru', SYNTAX)

# ---------------------------------------------------------------- empty, whitespace, BOM, NUL, encodings
add("empty", b"", SYNTAX)
add("whitespace_spaces", b"     ", SYNTAX)
add("whitespace_newlines", b"\n\n\n", SYNTAX)
add("whitespace_crlf_tabs", b"\r\n\t \r\n", SYNTAX)
add("bom_only", b"\xef\xbb\xbf", SYNTAX)
add("bom_whitespace", b"\xef\xbb\xbf  \n", SYNTAX)
add("bom_twice", b"\xef\xbb\xbf\xef\xbb\xbf" + dump(matrix()).encode(), SYNTAX)
add("bom_utf16le", b"\xff\xfe" + dump(matrix()).encode("utf-16-le"), SYNTAX)
add("bom_utf16be", b"\xfe\xff" + dump(matrix()).encode("utf-16-be"), SYNTAX)
add("utf16le_no_bom", dump(matrix()).encode("utf-16-le"), SYNTAX)
add("utf32le", dump(matrix()).encode("utf-32-le"), SYNTAX)
add("nul_only", b"\x00", SYNTAX)
add("nul_before", b"\x00" + dump(matrix()).encode(), SYNTAX)
add("nul_in_string", b'{"schema_version":1,"description":"a\x00b","cases":[' + dump(case()).encode() + b"]}", SYNTAX)
add("nul_in_key", b'{"schema_version":1,"cases":[' + dump(case()).encode() + b'],"a\x00":1}', SYNTAX)
add("nul_between_tokens", b'{"schema_version":1,\x00"cases":[' + dump(case()).encode() + b"]}", SYNTAX)
add("raw_newline_in_string", '{"schema_version":1,"description":"a\nb","cases":[%s]}' % dump(case()), SYNTAX)
add("raw_tab_in_string", '{"schema_version":1,"description":"a\tb","cases":[%s]}' % dump(case()), SYNTAX)
add("raw_del_outside_string", b'{"schema_version":1,\x7f"cases":[' + dump(case()).encode() + b"]}", SYNTAX)
add("raw_escape_char_in_string", '{"schema_version":1,"description":"\x1b[2J","cases":[%s]}' % dump(case()), SYNTAX)

# ---------------------------------------------------------------- invalid UTF-8
for name, seq in [("ff", b"\xff"), ("fe", b"\xfe"), ("lone_continuation", b"\x80"), ("overlong_slash", b"\xc0\xaf"),
                  ("overlong_nul", b"\xc0\x80"), ("surrogate_d800", b"\xed\xa0\x80"), ("above_10ffff", b"\xf4\x90\x80\x80"),
                  ("five_byte", b"\xf8\x88\x80\x80\x80"), ("truncated_2of3", b"\xe2\x82"), ("latin1_e9", b"\xe9t\xe9")]:
    add("utf8_%s_in_string" % name, b'{"schema_version":1,"description":"' + seq + b'","cases":[' + dump(case()).encode() + b"]}", SYNTAX)
add("utf8_ff_in_key", b'{"schema_version":1,"cases":[' + dump(case()).encode() + b'],"\xff":1}', SYNTAX)
add("utf8_ff_in_distribution", b'{"schema_version":1,"cases":[{"id":0,"k":3,"m":4,"n":16,"distribution":"uni\xffform"}]}', SYNTAX)
add("utf8_ff_outside_string", b'{"schema_version":1,\xff"cases":[' + dump(case()).encode() + b"]}", SYNTAX)
add("escape_lone_high_surrogate", '{"schema_version":1,"description":"\\ud800","cases":[%s]}' % dump(case()), SYNTAX)
add("escape_lone_low_surrogate", '{"schema_version":1,"description":"\\udc00","cases":[%s]}' % dump(case()), SYNTAX)
add("escape_bad_hex", '{"schema_version":1,"description":"\\u12g4","cases":[%s]}' % dump(case()), SYNTAX)
add("escape_x", '{"schema_version":1,"description":"\\x41","cases":[%s]}' % dump(case()), SYNTAX)
add("escape_single_quote", '{"schema_version":1,"description":"\\\'","cases":[%s]}' % dump(case()), SYNTAX)

# ---------------------------------------------------------------- JSON syntax that is not JSON
base = dump(matrix())
add("trailing_comma_object", base[:-1] + ",}", SYNTAX)
add("trailing_comma_array", '{"schema_version":1,"cases":[%s,]}' % dump(case()), SYNTAX)
add("double_comma", '{"schema_version":1,,"cases":[%s]}' % dump(case()), SYNTAX)
add("missing_comma", '{"schema_version":1 "cases":[%s]}' % dump(case()), SYNTAX)
add("missing_colon", '{"schema_version" 1,"cases":[%s]}' % dump(case()), SYNTAX)
add("single_quotes", base.replace('"', "'"), SYNTAX)
add("unquoted_keys", '{schema_version:1,cases:[{id:0,k:3,m:4,n:16}]}', SYNTAX)
add("line_comment", "// matrix\n" + base, SYNTAX)
add("block_comment", "/* matrix */" + base, SYNTAX)
add("hash_comment", "# matrix\n" + base, SYNTAX)
add("two_roots", base + base, SYNTAX)
add("trailing_garbage", base + "x", SYNTAX)
add("trailing_bracket", base + "]", SYNTAX)
add("unbalanced_close", '{"schema_version":1,"cases":[%s]]}' % dump(case()), SYNTAX)
add("wrong_close", '{"schema_version":1,"cases":[%s}}' % dump(case()), SYNTAX)
add("yaml", "schema_version: 1\ncases:\n  - {id: 0, k: 3, m: 4, n: 16}\n", SYNTAX)
add("csv", "id,k,m,n\n0,3,4,16\n", SYNTAX)
add("xml", "<matrix><case id='0' k='3' m='4' n='16'/></matrix>", SYNTAX)
add("python_literals", '{"schema_version":1,"cases":[{"id":0,"k":3,"m":4,"n":16,"seed":None}]}', SYNTAX)
add("uppercase_true", raw_case_field("k", "TRUE"), SYNTAX)
add("literal_undefined", raw_case_field("k", "undefined"), SYNTAX)

# ---------------------------------------------------------------- numbers JSON does not have
for name, lit in [("nan", "NaN"), ("nan_lower", "nan"), ("infinity", "Infinity"), ("minus_infinity", "-Infinity"),
                  ("inf", "inf"), ("hex", "0x10"), ("octal_leading_zero", "010"), ("plus_sign", "+16"),
                  ("leading_dot", ".5"), ("trailing_dot", "16."), ("bare_exponent", "1e"), ("exponent_sign_only", "1e+"),
                  ("double_minus", "--1"), ("minus_only", "-"), ("digit_separator", "1_000"), ("comma_decimal", "1,5e")]:
    add("k_%s" % name, raw_case_field("k", lit), SYNTAX)

# Overflowing numbers: nlohmann reports these as out_of_range, not parse_error.
add("k_1e400", raw_case_field("k", "1e400"), "1e400")
add("n_minus_1e400", raw_case_field("n", "-1e400"), "1e400")
add("seed_1e309", raw_case_field("seed", "1e309"), "1e309")
add("m_400_digits", raw_case_field("m", "1" + "0" * 400), "0000")
add("description_1e400", '{"schema_version":1,"description":1e400,"cases":[%s]}' % dump(case()), "1e400")

# ---------------------------------------------------------------- root of the wrong type
for name, text in [("array", "[]"), ("array_of_matrix", "[%s]" % base), ("string", '"matrix"'), ("number", "1"),
                   ("null", "null"), ("true", "true"), ("false", "false"), ("empty_string", '""'), ("negative", "-0")]:
    add("root_%s" % name, text, "/: ")

# ---------------------------------------------------------------- top level
add("empty_object", "{}", "/schema_version")
add("no_schema_version", dump(matrix(schema_version=DROP)), "/schema_version")
add("no_cases", dump(matrix(cases=DROP)), "/cases")
for name, v in [("0", 0), ("2", 2), ("minus_1", -1), ("string", "1"), ("float", 1.0), ("true", True), ("null", None),
                ("array", [1]), ("object", {"v": 1}), ("huge", 2**64 - 1), ("int_max", INT_MAX)]:
    add("schema_version_%s" % name, dump(matrix(schema_version=v)), "/schema_version")
add("schema_version_exponent", '{"schema_version":1e0,"cases":[%s]}' % dump(case()), "/schema_version")
add("schema_version_minus_zero_float", '{"schema_version":-0.0,"cases":[%s]}' % dump(case()), "/schema_version")
for name, v in [("empty", []), ("object", {"0": case()}), ("null", None), ("string", "all"), ("number", 1), ("true", True)]:
    add("cases_%s" % name, dump(matrix(cases=v)), "/cases")
for name, key in [("extra", "extra"), ("cases_typo", "case"), ("uppercase", "Cases"), ("empty_key", ""),
                  ("trailing_space", "cases "), ("fullwidth", "ｃａｓｅｓ"), ("slash", "a/b"), ("tilde", "~1"),
                  ("version", "version"), ("k_at_top", "k")]:
    add("unknown_top_%s" % name, dump(matrix(**{key: 1})), "expected no unknown field")
for name, v in [("number", 1), ("null", None), ("array", ["a"]), ("object", {"text": "a"}), ("true", True)]:
    add("description_%s" % name, dump(matrix(description=v)), "/description")

# ---------------------------------------------------------------- defaults
for name, v in [("array", [2]), ("string", "topk=2"), ("null", None), ("number", 2), ("true", True)]:
    add("defaults_%s" % name, dump(matrix(defaults=v)), "/defaults")
for name, d in [("unknown_k", {"k": 3}), ("unknown_n", {"n": 3}), ("unknown_groups", {"groups": ["a"]}),
                ("unknown_description", {"description": "x"}), ("unknown_id", {"id": 1})]:
    add("defaults_%s" % name, dump(matrix(defaults=d)), "/defaults/")
for name, v in [("0", 0), ("minus_1", -1), ("string", "2"), ("float", 2.0), ("half", 1.5), ("int_max_plus_1", INT_MAX + 1),
                ("2_63", 2**63), ("2_64", 2**64), ("null", None), ("array", [2]), ("over_n", 17), ("int_max", INT_MAX)]:
    add("defaults_topk_%s" % name, dump(matrix(defaults={"topk": v})), "/defaults/topk")
for name, v in [("gauss", "gauss"), ("empty", ""), ("capitalised", "Uniform"), ("number", 1), ("null", None),
                ("array", ["uniform"])]:
    add("defaults_distribution_%s" % name, dump(matrix(defaults={"distribution": v})), "/defaults/distribution")
for name, v in [("minus_1", -1), ("float", 7.0), ("string", "7"), ("2_64", 2**64), ("min_int64", -2**63), ("null", None),
                ("true", True)]:
    add("defaults_seed_%s" % name, dump(matrix(defaults={"seed": v})), "/defaults/seed")

# ---------------------------------------------------------------- case objects
for name, v in [("number", 7), ("string", "case"), ("null", None), ("array", [0, 3, 4, 16]), ("true", True)]:
    add("case_%s" % name, dump(matrix(cases=[v])), "/cases/0: ")
add("case_empty_object", dump(matrix(cases=[{}])), "/cases/0/id")
add("case_second_bad", dump(matrix(cases=[case(), 7])), "/cases/1: 7")
for field in ("id", "k", "m", "n"):
    add("missing_%s" % field, dump(matrix(cases=[case(**{field: DROP})])), "/cases/0/%s" % field)
for name, key in [("dims", "dims"), ("uppercase_k", "K"), ("uppercase_n", "N"), ("topK", "topK"), ("empty_key", ""),
                  ("trailing_space", "k "), ("fullwidth_k", "ｋ"), ("dim", "dim"), ("queries", "queries"), ("neighbours", "neighbours")]:
    add("unknown_case_%s" % name, dump(matrix(cases=[case(**{key: 3})])), "expected no unknown field")

# Integer fields: wrong types, strings for numbers, floats, out-of-range values.
INT_VARIANTS = [
    ("string", '"16"'), ("string_hex", '"0x10"'), ("string_empty", '""'), ("string_padded", '" 16"'),
    ("float", "16.0"), ("half", "1.5"), ("exponent", "1e1"), ("exponent_upper", "1E1"), ("tiny", "1e-400"),
    ("minus_1", "-1"), ("int_max_plus_1", str(INT_MAX + 1)), ("2_32", str(2**32)), ("2_53_plus_1", str(2**53 + 1)),
    ("int64_max", str(2**63 - 1)), ("2_63", str(2**63)), ("uint64_max", str(2**64 - 1)), ("2_64", str(2**64)),
    ("int64_min", str(-2**63)), ("below_int64_min", str(-2**63 - 1)), ("true", "true"), ("false", "false"),
    ("null", "null"), ("empty_array", "[]"), ("array", "[16]"), ("object", '{"value":16}'),
]
for field in ("id", "k", "m", "n", "topk"):
    for name, lit in INT_VARIANTS:
        add("%s_%s" % (field, name), raw_case_field(field, lit), "/cases/0/%s" % field)
    if field != "id":  # 0 and -0 are valid ids
        add("%s_zero" % field, raw_case_field(field, "0"), "/cases/0/%s: 0" % field)
        add("%s_minus_zero" % field, raw_case_field(field, "-0"), "/cases/0/%s: 0" % field)
        add("%s_minus_zero_float" % field, raw_case_field(field, "-0.0"), "/cases/0/%s" % field)

# topk > n
add("topk_over_n", dump(matrix(cases=[case(n=16, topk=17)])), "/cases/0/topk: 17")
add("topk_over_n_1", dump(matrix(cases=[case(n=1, topk=2)])), "/cases/0/topk: 2")
add("topk_int_max_n_1", dump(matrix(cases=[case(n=1, topk=INT_MAX)])), "/cases/0/topk")
add("topk_default_over_n", dump(matrix(defaults={"topk": 32}, cases=[case(n=16)])), "/defaults/topk: 32")
add("topk_default_over_second_n", dump(matrix(defaults={"topk": 8}, cases=[case(id=0, n=16), case(id=1, n=4)])), "/defaults/topk: 8")

# Duplicate ids
add("duplicate_id", dump(matrix(cases=[case(id=1), case(id=1)])), "/cases/1/id: 1")
add("duplicate_id_0", dump(matrix(cases=[case(id=0), case(id=0, k=16)])), "/cases/1/id: 0")
add("duplicate_id_far", dump(matrix(cases=[case(id=i) for i in range(500)] + [case(id=250)])), "/cases/500/id: 250")
add("duplicate_id_minus_zero", '{"schema_version":1,"cases":[%s,{"id":-0,"k":3,"m":4,"n":16}]}' % dump(case()), "/cases/1/id")
add("duplicate_id_int_max", dump(matrix(cases=[case(id=INT_MAX), case(id=INT_MAX)])), "/cases/1/id")

# Sizes whose products overflow int32/int64 or pass the loader's bound of 2^60 elements.
add("product_k_n_over_2_60", dump(matrix(cases=[case(k=536870913, n=INT_MAX)])), "k·m and k·n below 2^60")
add("product_k_m_over_2_60", dump(matrix(cases=[case(k=536870913, m=INT_MAX)])), "k·m and k·n below 2^60")
add("product_int_max_cubed", dump(matrix(cases=[case(k=INT_MAX, m=INT_MAX, n=INT_MAX)])), "k·m and k·n below 2^60")
add("product_int_max_k_small_n_huge_m", dump(matrix(cases=[case(k=INT_MAX, m=INT_MAX, n=1)])), "k·m and k·n below 2^60")
add("product_second_case", dump(matrix(cases=[case(id=0), case(id=1, k=2**30, n=2**30 + 1)])), "/cases/1: ")
add("product_int64_overflow_n", dump(matrix(cases=[case(k=4, n=2**62)])), "/cases/0/n")
add("product_int64_overflow_k", dump(matrix(cases=[case(k=2**32, n=2**32)])), "/cases/0/k")
add("product_uint64_wrap", dump(matrix(cases=[case(k=2**32 + 1, m=1, n=2**32 - 1)])), "/cases/0/k")
add("product_negative_times_negative", dump(matrix(cases=[case(k=-65536, n=-65536)])), "/cases/0/k")

# distribution, seed, groups, description
for name, v in [("gauss", "gauss"), ("empty", ""), ("capitalised", "Uniform"), ("upper", "UNIFORM"),
                ("padded", " uniform"), ("nul", "uniform\u0000"), ("number", 1), ("null", None), ("array", ["uniform"]),
                ("object", {"name": "uniform"}), ("long", "u" * 20000)]:
    add("distribution_%s" % name, dump(matrix(cases=[case(distribution=v)])), "/cases/0/distribution")
for name, v in [("minus_1", -1), ("float", 7.0), ("half", 0.5), ("string", "7"), ("2_64", 2**64), ("int64_min", -2**63),
                ("true", True), ("null", None), ("array", [7])]:
    add("seed_%s" % name, dump(matrix(cases=[case(seed=v)])), "/cases/0/seed")
for name, v, where in [("string", "ta", ""), ("null", None, ""), ("object", {"ta": 1}, ""), ("empty_name", [""], "/0"),
                       ("uppercase", ["Big"], "/0"), ("space", ["a b"], "/0"), ("number", [1], "/0"), ("null_item", [None], "/0"),
                       ("nested", [["ta"]], "/0"), ("second_bad", ["ta", 1], "/1"), ("accent", ["é"], "/0"),
                       ("slash", ["a/b"], "/0"), ("nul", ["ta\u0000"], "/0"), ("newline", ["ta\n"], "/0"),
                       ("long", ["g" * 19999 + "!"], "/0"), ("fullwidth", ["ｔａ"], "/0")]:
    add("groups_%s" % name, dump(matrix(cases=[case(groups=v)])), "/cases/0/groups" + where)
for name, v in [("number", 1), ("null", None), ("array", ["x"]), ("object", {}), ("true", True)]:
    add("case_description_%s" % name, dump(matrix(cases=[case(description=v)])), "/cases/0/description")

# ---------------------------------------------------------------- data files (queries_file, references_file)
# Only refusals that need no data file: binary data is never committed; tests/test_datafiles.cpp
# writes its files. Relative paths resolve against this folder, where none of these exist.
for field in ("queries_file", "references_file"):
    for name, v in [("number", 7), ("null", None), ("true", True), ("array", ["a.npy"]), ("object", {}), ("empty", "")]:
        add("%s_%s" % (field, name), dump(matrix(cases=[case(**{field: v})])), "/cases/0/%s: " % field)
add("queries_file_missing", dump(matrix(cases=[case(queries_file="no_such_file.npy")])), "no_such_file.npy: no such file: expected a data file")
add("references_file_missing_absolute", dump(matrix(cases=[case(references_file="/nonexistent/knnbench/refs.fvecs")])),
    "/cases/0/references_file: /nonexistent/knnbench/refs.fvecs: no such file")
add("references_file_second_case_missing", dump(matrix(cases=[case(), case(id=1, references_file="refs.bin")])), "/cases/1/references_file")
add("references_file_unknown_extension", dump(matrix(cases=[case(references_file="expected.tsv")])), 'unknown extension ".tsv"')
add("queries_file_no_extension", dump(matrix(cases=[case(queries_file="README")])), "no extension: expected one of")
add("queries_file_newline", dump(matrix(cases=[case(queries_file="a\nb.npy")])), "/cases/0/queries_file: ")
add("queries_file_nul", dump(matrix(cases=[case(queries_file="a\u0000.npy")])), "/cases/0/queries_file: ")
add("queries_file_in_defaults", dump(matrix(defaults={"queries_file": "q.npy"})), "/defaults/queries_file")

# Many cases, the last one bad.
add("many_cases_last_bad", dump(matrix(cases=[case(id=i) for i in range(2000)] + [case(id=2000, n=0)])), "/cases/2000/n: 0")

# ---------------------------------------------------------------- deeply nested junk
DEEP = 100000
add("deep_arrays_root", "[" * DEEP + "]" * DEEP, "/: ")
add("deep_arrays_root_truncated", "[" * DEEP, SYNTAX)
add("deep_arrays_in_k", raw_case_field("k", "[" * DEEP + "]" * DEEP), "/cases/0/k")
add("deep_arrays_in_unknown_field", '{"schema_version":1,"cases":[%s],"junk":%s}' % (dump(case()), "[" * DEEP + "]" * DEEP), "/junk")
add("deep_arrays_1000_in_k", raw_case_field("k", "[" * 1000 + "]" * 1000), "/cases/0/k")
add("deep_mixed_1000_in_seed", raw_case_field("seed", '[{"a":' * 1000 + "1" + "}]" * 1000), "/cases/0/seed")
# Deeper objects and 10^6 arrays are generated by tests/test_corpus.cpp, not kept as files.

# ---------------------------------------------------------------- very long strings and keys
LONG = 20000
add("long_string_k", raw_case_field("k", '"' + "9" * LONG + '"'), "/cases/0/k")
add("long_digits_k", raw_case_field("k", "9" * 4096), "9999")
add("long_string_truncated", '{"schema_version":1,"description":"' + "a" * LONG, SYNTAX)
add("long_unknown_key", '{"schema_version":1,"cases":[%s],"%s":1}' % (dump(case()), "x" * LONG), "expected no unknown field")
add("long_whitespace_then_junk", " " * LONG + "x", SYNTAX)

# Keys with control characters: the message must stay on one line.
for name, key in [("newline", "a\nb"), ("carriage_return", "a\rb"), ("escape", "\u001b[31mred"), ("nul", "a\u0000b"),
                  ("tab", "a\tb")]:
    add("unknown_key_%s" % name, '{"schema_version":1,"cases":[%s],%s:1}' % (dump(case()), json.dumps(key)), "expected no unknown field")

# ---------------------------------------------------------------- binary junk (seeded)
rng = random.Random(20240607)
for i in range(8):
    add("binary_junk_%02d" % i, bytes(rng.randrange(256) for _ in range(rng.randrange(1, 512))), SYNTAX)
add("binary_junk_opening_brace", b"{" + bytes(rng.randrange(256) for _ in range(64)), SYNTAX)

# ---------------------------------------------------------------- write
if os.path.isdir(OUT):
    shutil.rmtree(OUT)
os.makedirs(OUT)
with open(os.path.join(OUT, "expected.tsv"), "w", encoding="utf-8") as tsv:
    tsv.write("# file\tpart of the error message (after the file name); written by make_matrix_corpus.py\n")
    for name in sorted(files):
        data, expect = files[name]
        assert "\t" not in expect and "\n" not in expect
        with open(os.path.join(OUT, name), "wb") as f:
            f.write(data)
        tsv.write("%s\t%s\n" % (name, expect))
print("%d matrices in %s" % (len(files), OUT))
