"""Foundation shared by every stage: strict JSON, the generic registry, plugins, progress
events, units and stable ids."""
