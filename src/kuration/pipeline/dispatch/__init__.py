"""Planning a run and handing it to a runtime: compile_plan, preflight, execute and run_hours."""
