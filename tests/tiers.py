"""The test tiers: ``make test-fast`` (``pytest --fast``) runs the unit tests, leaving out
those with a marker of ``HEAVY``; ``make test`` runs them all.

A test gets its markers from what it uses (``markers_of``): a name its code, its fixtures'
code or the code of the functions of tests/ they call refers to (``USES``: the helpers that
start servers, the ``spark`` fixture...), or its module (``MODULES``), or its name
(``TESTS``). So that the fast tier cannot rot unseen, ``--fast`` also installs
tests/fastguard.py: a test that starts Java, Spark, Hadoop or a browser, or listens on a
network socket, fails, naming the marker it needs.
"""
import os
import types

# The markers (pytest.ini declares them) that keep a test out of the fast tier
HEAVY = ("cluster", "spark", "hadoop", "server", "browser", "slow")
# What a test uses -> its marker: a name (the Spark fixture, what drives a browser, the
# helper modules that start servers) or the code of a helper of tests/ it runs
USES = {
    "spark": "spark", "pyspark": "spark",
    "s3server": "server", "rangeserver": "server", "servers": "server",
    "faultproxy": "server", "emr_moto": "server", "ThreadingHTTPServer": "server",
    "hadoop_local": "hadoop",
    "webdriver": "browser",
}
HELPERS = {"s3server.py": "server", "rangeserver.py": "server", "servers.py": "server",
           "faultproxy.py": "server", "emr_moto.py": "server", "hadoop_local.py": "hadoop"}
# Test modules whose every test has a marker, and why (what USES cannot see)
MODULES = {
    "test_launchers.py": ("server", "moto's EMR and S3 servers, the launchers as processes"),
    "test_real_hadoop.py": ("hadoop", "real Hadoop's local job runner"),
    "test_spark_cluster.py": ("spark", "a standalone Spark cluster"),
    **{module: ("spark", "Spark jobs and spark-submit") for module in (
        "test_spark.py", "test_spark_trust.py")},
    **{module: ("server", "servers of their own (serve, HTTP), started by name") for module in (
        "test_serve.py", "test_serve_trust.py", "test_cdxapi_trust.py", "test_storage_http.py",
        "test_access.py", "test_access_pywb.py", "test_serve_idle.py")},
    "test_wacz_out.py": ("browser", "ReplayWeb.page in Chromium, py-wacz's commands"),
    "test_walker_builds.py": ("slow", "compiles the C member walker twice, seconds each"),
    **{module: ("slow", "commands and builds end to end, seconds each") for module in (
        "test_bad_input.py", "test_build_parquet.py", "test_build_trust.py",
        "test_columnar.py", "test_copy.py", "test_copy_zstd.py", "test_corpus.py",
        "test_docs.py", "test_environment.py", "test_first_hour.py", "test_hdfs_storage.py",
        "test_index_build.py", "test_inputs_trust.py", "test_local_engine.py",
        "test_pipeline.py", "test_publish.py", "test_query_pages.py", "test_recompress.py",
        "test_records_trust.py", "test_runtime_trust.py", "test_post_keys.py",
        "test_wacz.py", "test_wacz_more.py")},
}
# Tests (by function, every parameter) of the other modules: their marker. "slow": seconds
# of CPU each (measured with --durations)
TESTS = {
    "test_engines.py": {"test_every_engine_name_opens_an_engine_that_starts_nothing_until_used":
                        "spark"},
    "test_block_deflate.py": dict.fromkeys((
        "test_every_engine_writes_the_same_bytes_for_the_same_deflate",
        "test_an_update_keeps_the_deflate_of_the_build_it_updates",
        "test_a_cluster_recorded_without_a_deflate_is_updated_as_zlib_6"), "slow"),
    **{module: dict.fromkeys(names, "slow") for module, names in {
        "test_query.py": ("test_lookup_matches_brute_force_and_pywb",
                          "test_lookup_range_arbitrary_keys", "test_pywb_page_sizes_agree"),
        "test_cdxapi.py": ("test_resume_keys_neither_skip_nor_repeat", "test_closest"),
        "test_cdxmeta.py": ("test_stale_or_unrecorded_cdx_files_are_made_again",
                            "test_a_cdx_of_another_format_is_made_again"),
        "test_members.py": ("test_bad_input_corpus",),
        "test_legacyindex.py": ("test_build_a_cluster_from_the_legacy_index",),
        "test_cdx.py": ("test_uncompressed_stream_goes_on_after_a_bad_record_like_a_file",
                        "test_url_key_equals_surt"),
        "test_copy_csv.py": ("test_launcher_takes_a_records_csv", "test_copy_of_a_duckdb_query"),
        "test_indexinputs_trust.py": (
            "test_names_with_white_space_are_refused_for_classic_lines_and_kept_in_cdxj",),
        "test_zstd.py": (
            "test_index_job_launcher_takes_a_dictionary_kept_apart",
            "test_a_highly_compressible_record_is_never_held_whole",
            "test_corpus_with_a_dictionary_indexes_like_gzip",
            "test_build_from_warc_zst_equals_build_from_warc_gz",
            "test_a_frame_with_another_dictionary_among_good_ones",
            "test_build_with_a_dictionary_kept_apart", "test_a_wrong_dictionary",
            "test_frames_decompressed_whole_read_as_frames_fed_bit_by_bit",
            "test_we_read_what_fastwarc_writes"),
    }.items()},
}
def markers_of(item):
    """The markers of HEAVY that ``item`` (a pytest test) gets from what it uses."""
    found = set()
    module = os.path.basename(str(item.fspath))
    if module in MODULES:
        found.add(MODULES[module][0])
    marker = TESTS.get(module, {}).get(getattr(item, "originalname", None))
    if marker:
        found.add(marker)
    found.update(USES[name] for name in item.fixturenames if name in USES)
    infos = getattr(item, "_fixtureinfo", None)
    functions = [getattr(item, "function", None)]
    if infos is not None:
        functions += [defs[-1].func for name, defs in infos.name2fixturedefs.items()
                      if name in item.fixturenames and defs]
    names, files = _names(functions)
    found.update(USES[name] for name in names if name in USES)
    found.update(HELPERS[name] for name in files if name in HELPERS)
    return found


def _names(functions):
    """Every name the code of ``functions`` refers to, and that of the functions of tests/
    it calls, transitively; and the files of tests/ that code is in."""
    tests = os.path.dirname(os.path.abspath(__file__))
    seen, names, files = set(), set(), set()
    todo = [f for f in functions if f is not None]
    while todo:
        function = todo.pop()
        code = getattr(function, "__code__", None)
        if code is None or code in seen or not code.co_filename.startswith(tests):
            continue
        seen.add(code)
        files.add(os.path.basename(code.co_filename))
        codes = [code]
        while codes:  # and the lambdas and functions defined within it
            one = codes.pop()
            names.update(one.co_names)
            names.update(one.co_freevars)
            codes += [c for c in one.co_consts if isinstance(c, types.CodeType)]
            for name in one.co_names:
                value = function.__globals__.get(name)
                if callable(value):
                    todo.append(value)
                elif isinstance(value, types.ModuleType):
                    names.add(value.__name__.rpartition(".")[2])
                    todo += [getattr(value, n, None) for n in one.co_names
                             if callable(getattr(value, n, None))]
    return names, files
