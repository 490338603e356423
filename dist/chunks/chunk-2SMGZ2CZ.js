import { createRequire as __nbgCreateRequire } from 'node:module'; const require = __nbgCreateRequire(import.meta.url);
import {
  Octokit,
  legacyRestEndpointMethods,
  paginateRest,
  requestLog
} from "./chunk-46BD3A7W.js";

// node_modules/@octokit/rest/dist-src/version.js
var VERSION = "22.0.1";

// node_modules/@octokit/rest/dist-src/index.js
var Octokit2 = Octokit.plugin(requestLog, legacyRestEndpointMethods, paginateRest).defaults(
  {
    userAgent: `octokit-rest.js/${VERSION}`
  }
);

export {
  Octokit2 as Octokit
};
