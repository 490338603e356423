"""air-mini shared toolkit (emulated): kernel cache, kernel emulators, injections."""
