/** `host/http`: the Koa app. Only composes: tenant resolution, errors, body limits and routes. */
export { createHttpApp, type HttpOptions, listen, type RunningServer } from "./server.js";
