"""The logind adapter: every D-Bus call the agent makes, each with a timeout."""
