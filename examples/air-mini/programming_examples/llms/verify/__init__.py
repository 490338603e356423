"""air-mini verify subsystem (emulated HF reference, records, comparators)."""
