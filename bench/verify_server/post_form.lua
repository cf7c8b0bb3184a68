-- wrk script: every request is one form submission, as a browser would send it.
-- The body comes from CLEANROOM_BENCH_BODY so the same script serves any lease.
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/x-www-form-urlencoded"
wrk.body = os.getenv("CLEANROOM_BENCH_BODY") or "token=env01-w001-r0001-0123abcd"
