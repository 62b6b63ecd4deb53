"""The steps of a build, whatever the engine: tasks, runs and merges, updates, publishing."""
