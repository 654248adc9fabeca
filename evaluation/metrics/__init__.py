"""Pure metric functions: arrays in, numbers out, validation at the top, no I/O."""
