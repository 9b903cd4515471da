import type { Middleware } from "koa";
import type { EndpointDeclaration } from "../../sdk/protocol/index.js";
import { LIMITS, PlatformError } from "../../sdk/protocol/index.js";
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

/** A declaration's endpoints by `METHOD path`, and each declared path's methods. */
interface EndpointIndex {
  byRoute: Map<string, EndpointDeclaration>;
  methods: Map<string, string[]>;
}

/** Each declaration's index, made once: every request to a deployment looks. */
const endpointIndexes = new WeakMap<EndpointDeclaration[], EndpointIndex>();

function endpointsOf(endpoints: EndpointDeclaration[]): EndpointIndex {
  let index = endpointIndexes.get(endpoints);
  if (!index) {
    index = { byRoute: new Map(), methods: new Map() };
    for (const endpoint of endpoints) {
      index.byRoute.set(`${endpoint.method} ${endpoint.path}`, endpoint);
      index.methods.set(endpoint.path, [...(index.methods.get(endpoint.path) ?? []), endpoint.method]);
    }
    endpointIndexes.set(endpoints, index);
  }
  return index;
}

/**
 * Serves a deployment's custom endpoints at their declared method and path, looked up in an index
 * of the capsule's declaration (the paths are data, so no router table holds them); a
 * declared path asked with another method is `405 method_not_allowed` with `Allow`, and any
 * other request goes on. Identity comes from `X-Platform-Token`; each call is
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
    const index = endpointsOf(record.declaration.endpoints);
    const endpoint = index.byRoute.get(`${ctx.method} ${ctx.path}`);
    if (!endpoint) {
      // A declared path asked with another method: 405 naming the ones it answers (HEAD goes on).
      const methods = index.methods.get(ctx.path);
      if (methods === undefined || ctx.method === "HEAD") return next();
      ctx.set("Allow", methods.join(", "));
      throw new PlatformError(
        "method_not_allowed",
        `${ctx.path} answers ${methods.join(", ")}, not ${ctx.method}.`,
      );
    }
    ctx.state.endpoint = endpoint;
    return serve(ctx, next);
  };
}
