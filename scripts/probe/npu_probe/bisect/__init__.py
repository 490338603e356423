"""`probe bisect` (seed Step 4): rundir (the run a block stage recorded, rebuilt), hook (the
model's bisect_steps), launches (the CPU twins of the ELFs), main (which applies)."""
