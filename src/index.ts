// The Action's entry point (action.yml runs dist/index.js): only calls run().
import { run } from './main.ts';

void run();
