/**
 * A hosted client file asked for with GET is looked up twice (its entry, then its bytes): a
 * redeploy between the two that removed it answers as if it had never been there, a `404` without
 * the file's headers, not an empty `200` with its ETag (a cache would keep that).
 */
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import Koa from "koa";
import { expect, it } from "vitest";
import { sendRequest } from "../../cli/http.js";
import type { DeploymentService } from "../deployments/index.js";
import { clientRoutes } from "./client-routes.js";
import { errorEnvelope } from "./errors.js";
import { RequestQuota } from "./request-quota.js";

it("answers 404 without the file's headers when the file went between its two lookups", async () => {
  const entry = { path: "app.js", hash: "a".repeat(64), size: 5 };
  // The entry is found, then the bytes are not: the version was replaced in between.
  const deployments = {
    clientFile: async (_id: string, path: string, withBytes: boolean) =>
      path === "app.js" ? (withBytes ? undefined : { entry, bytes: undefined }) : undefined,
  } as unknown as DeploymentService;
  const app = new Koa();
  app.use(errorEnvelope(() => {}));
  app.use(async (ctx, next) => {
    ctx.state.deployment = "app";
    await next();
  });
  app.use(clientRoutes(deployments, new RequestQuota(false)));
  const server = createServer(app.callback());
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  try {
    const answer = await sendRequest(`http://127.0.0.1:${(server.address() as AddressInfo).port}/app.js`);
    expect(answer.status).toBe(404);
    expect(answer.json()).toMatchObject({ error: { code: "not_found" } });
    expect(answer.headers.etag).toBeUndefined();
    expect(answer.headers["cache-control"]).toBeUndefined();
  } finally {
    server.close();
  }
});
