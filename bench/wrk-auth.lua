-- bench/wrk-auth.lua - wrk script for bench/http.sh: sends the bearer key
-- read from the environment variable UNIAP_BENCH_KEY with every request, so
-- wrk can load the authenticated /v1 routes (wrk has no header option for
-- scripts it runs per thread; each thread loads this file into its own state).
local key = os.getenv("UNIAP_BENCH_KEY")
if key == nil or key == "" then
	io.stderr:write("wrk-auth.lua: UNIAP_BENCH_KEY is not set\n")
	os.exit(2)
end
wrk.headers["Authorization"] = "Bearer " .. key
