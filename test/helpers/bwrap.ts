// Whether bubblewrap can isolate a probe here: the precondition of the tests that run the sandbox.
import { realHost } from '../../src/probe/isolate.ts';
import type { Missing } from './skip.ts';

export const missingBwrap: Missing | null = realHost.which('bwrap') === null
  ? { need: 'bwrap', why: 'bubblewrap is not installed (apt install bubblewrap)' }
  : realHost.works(['bwrap', '--die-with-parent', '--unshare-pid', '--ro-bind', '/', '/', '--proc', '/proc', '--dev', '/dev', 'true'])
    ? null
    : { need: 'bwrap', why: 'bubblewrap cannot create namespaces here (unprivileged user namespaces disabled?)' };
