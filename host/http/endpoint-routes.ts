import type { Middleware } from "koa";
import type { EndpointDeclaration } from "../../sdk/protocol/index.js";
import { LIMITS } from "../../sdk/protocol/index.js";
import type { AuthService } from "../auth/index.js";
import type { DeploymentService } from "../deployments/index.js";
import { rawBody } from "./body.js";
import { ENDPOINT_TOKEN_HEADER, endpointToken } from "./credentials.js";
import { readEndpointAnswer } from "./endpoint-answer.js";
import { identify } from "./identity.js";
import { chargeRequest, type RequestQuota } from "./request-quota.js";
import { series } from "./routing.js";

/** Runs the matched endpoint (`ctx.state.endpoint`) and answers with what its handler built. */
function callEndpoint(deployments: DeploymentService): Middleware {
  return async (ctx) => {
    const id = ctx.state.deployment as string;
    const endpoint = ctx.state.endpoint as EndpointDeclaration;
    const body = ctx.state.body as Buffer;
    const headers = Object.entries(ctx.headers).flatMap(([name, value]) =>
      name === ENDPOINT_TOKEN_HEADER || value === undefined
        ? []
        : (Array.isArray(value) ? value : [value]).map((v) => [name, v] as [string, string]),
    );
    const query = [...new URLSearchParams(ctx.querystring).entries()];
    const result = await deployments.callEndpoint(
      id,
      endpoint.name,
      { method: ctx.method, path: ctx.path, headers, query, bodyBase64: body.toString("base64") },
      ctx.state.identity,
      ctx.state.session,
    );
    const { head, body: answerBody } = readEndpointAnswer(result.valueJson, endpoint.name);
    ctx.status = head.status;
    for (const [name, value] of head.headers) ctx.set(name, value);
    // Never sniffed, and never guessed: Koa would serve a body starting with "<" as HTML.
    ctx.set("X-Content-Type-Options", "nosniff");
    if (!ctx.response.get("Content-Type")) ctx.type = "text/plain; charset=utf-8";
    ctx.body = answerBody;
  };
}

/** Each declaration's endpoints by `METHOD path`, made once: every request to a deployment looks. */
const endpointIndexes = new WeakMap<EndpointDeclaration[], Map<string, EndpointDeclaration>>();

function endpointsOf(endpoints: EndpointDeclaration[]): Map<string, EndpointDeclaration> {
  let index = endpointIndexes.get(endpoints);
  if (!index) {
    index = new Map(endpoints.map((endpoint) => [`${endpoint.method} ${endpoint.path}`, endpoint]));
    endpointIndexes.set(endpoints, index);
  }
  return index;
}

/**
 * Serves a deployment's custom endpoints at their declared method and path, looked up in an index
 * of the capsule's declaration (the paths are data, so no router table holds them); a
 * request no endpoint declares goes on. Identity comes from `X-Platform-Token`; each call is
 * charged to the caller's request quota before its body is read. The response is what the handler
 * built with `json()` or `text()`; its cookies stay on the deployment's host (see
 * `endpointHead` in sdk/protocol).
 */
export function endpointRoutes(
  deployments: DeploymentService,
  auth: AuthService,
  quota: RequestQuota,
): Middleware {
  const serve = series([
    identify(auth, endpointToken, quota),
    chargeRequest(quota),
    rawBody(LIMITS.requestBodyBytes),
    callEndpoint(deployments),
  ]);
  return async (ctx, next) => {
    const record = await deployments.require(ctx.state.deployment as string);
    const endpoint = endpointsOf(record.declaration.endpoints).get(`${ctx.method} ${ctx.path}`);
    if (!endpoint) return next();
    ctx.state.endpoint = endpoint;
    return serve(ctx, next);
  };
}
