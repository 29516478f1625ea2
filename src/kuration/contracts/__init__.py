"""The data contracts between the stages: SchemaSpec, Tick, WindowBuffer, Segment, Track."""
