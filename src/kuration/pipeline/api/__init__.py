"""The user's API: the fluent Pipeline, the function-style entry points and operators."""
