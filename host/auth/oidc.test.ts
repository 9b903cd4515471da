import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { exportJWK, generateKeyPair, SignJWT } from "jose";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { LIMITS } from "../../sdk/protocol/index.js";
import { boundedJwksFetch } from "./jwks-fetch.js";
import { OidcVerifier } from "./oidc.js";

const ISSUER = "https://idp.example";
let server: Server;
let base = "";
/** Requests each path got. */
const asked = new Map<string, number>();
let privateKey: Awaited<ReturnType<typeof generateKeyPair>>["privateKey"];
let realKey: Record<string, unknown> = {};

beforeAll(async () => {
  const pair = await generateKeyPair("RS256");
  privateKey = pair.privateKey;
  realKey = { ...(await exportJWK(pair.publicKey)), kid: "k1", alg: "RS256", use: "sig" };
  const junk = (count: number) => Array.from({ length: count }, (_, i) => ({ ...realKey, kid: `junk${i}` }));
  server = createServer((req, res) => {
    const path = req.url ?? "";
    asked.set(path, (asked.get(path) ?? 0) + 1);
    res.setHeader("content-type", "application/json");
    if (path === "/good") res.end(JSON.stringify({ keys: [realKey] }));
    else if (path === "/flaky" && (asked.get(path) ?? 0) === 1) res.end(JSON.stringify({ keys: [realKey] }));
    else if (path === "/huge")
      res.end(JSON.stringify({ keys: [realKey], pad: "x".repeat(LIMITS.jwksBytes) }));
    else if (path === "/many") res.end(JSON.stringify({ keys: [realKey, ...junk(LIMITS.jwksKeys)] }));
    else {
      res.statusCode = 500;
      res.end("{}");
    }
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

/** A verifier of one issuer whose JWKS is at `path`, for every deployment. */
const verifier = (path: string) =>
  new OidcVerifier([{ issuer: ISSUER, jwksUri: `${base}${path}`, audience: "app", deployments: "*" }]);

const token = (expires = true, audience: string | string[] = "app", extra: Record<string, unknown> = {}) => {
  const jwt = new SignJWT({ email: "ada@example.com", email_verified: true, ...extra })
    .setProtectedHeader({ alg: "RS256", kid: "k1" })
    .setIssuer(ISSUER)
    .setAudience(audience)
    .setJti(Math.random().toString(36))
    .setIssuedAt();
  return (expires ? jwt.setExpirationTime("5m") : jwt).sign(privateKey);
};

describe("OpenID Connect ID tokens and an issuer's JWKS", () => {
  it("verifies tokens against a JWKS within its bounds", async () => {
    expect(await verifier("/good").verifiedEmail("d", await token())).toBe("ada@example.com");
  });

  it("refuses an ID token without an expiry", async () => {
    await expect(verifier("/good").verifiedEmail("d", await token(false))).rejects.toMatchObject({
      code: "unauthorized",
    });
  });

  it("is refused past its bytes or its keys: the sign-in fails, nothing of it is used", async () => {
    for (const path of ["/huge", "/many"])
      await expect(verifier(path).verifiedEmail("d", await token())).rejects.toMatchObject({
        code: "unauthorized",
      });
  });

  it("after a failed refresh, is answered as last fetched, and not asked again meanwhile", async () => {
    // jose asks again once its copy is old (10 minutes); the issuer answers 500 by then.
    const fetchJwks = boundedJwksFetch();
    const first = await fetchJwks(`${base}/flaky`, {});
    const good = await first.text();
    expect(JSON.parse(good)).toEqual({ keys: [realKey] });
    for (let i = 0; i < 3; i++) {
      const again = await fetchJwks(`${base}/flaky`, {});
      expect([again.status, await again.text()]).toEqual([200, good]);
    }
    expect(asked.get("/flaky")).toBe(2);
    // An hour after its fetch, the last good JWKS no longer serves: the issuer's removed keys go.
    const limits = LIMITS as { jwksStaleMs: number; jwksRetryMs: number };
    const before = { ...limits };
    limits.jwksStaleMs = 0;
    limits.jwksRetryMs = 0;
    try {
      await expect(fetchJwks(`${base}/flaky`, {})).rejects.toThrow("answered 500");
    } finally {
      Object.assign(limits, { jwksStaleMs: before.jwksStaleMs, jwksRetryMs: before.jwksRetryMs });
    }
  });

  it("is not fetched again right after a failure: sign-ins meanwhile fail at once", async () => {
    const failing = verifier("/down");
    for (let i = 0; i < 4; i++)
      await expect(failing.verifiedEmail("d", await token())).rejects.toMatchObject({ code: "unauthorized" });
    expect(asked.get("/down")).toBe(1);
  });

  it("signs in once per token: the same token again is refused, a new one is not", async () => {
    const once = verifier("/good");
    const first = await token();
    expect(await once.verifiedEmail("d", first)).toBe("ada@example.com");
    await expect(once.verifiedEmail("d", first)).rejects.toMatchObject({
      code: "unauthorized",
      message:
        "This ID token was already used to sign in: sign in with the identity provider again for a new one.",
    });
    expect(await once.verifiedEmail("d", await token())).toBe("ada@example.com");
  });

  it("knows a used token however its signature is spelt (padding, spaces, a last character's spare bits)", async () => {
    const once = verifier("/good");
    const first = await token();
    expect(await once.verifiedEmail("d", first)).toBe("ada@example.com");
    const signature = first.slice(first.lastIndexOf(".") + 1);
    const last = signature.at(-1) as string;
    const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    // The same sextet's high bits, low bits changed: for 256 bytes of RS256, the last 4 bits are spare.
    const sibling = alphabet[
      (alphabet.indexOf(last) & ~0x3) | ((alphabet.indexOf(last) + 1) & 0x3)
    ] as string;
    for (const respelt of [`${first} `, `${first}==`, `${first.slice(0, -1)}${sibling}`])
      await expect(once.verifiedEmail("d", respelt)).rejects.toMatchObject({ code: "unauthorized" });
  });

  it("may be used again once forgotten (its sign-in failed after it was verified)", async () => {
    const once = verifier("/good");
    const first = await token();
    expect(await once.verifiedEmail("d", first)).toBe("ada@example.com");
    once.unspend(first);
    expect(await once.verifiedEmail("d", first)).toBe("ada@example.com");
  });

  it("refuses a token for several clients that was not issued to this one (its azp)", async () => {
    const several = verifier("/good");
    await expect(
      several.verifiedEmail("d", await token(true, ["app", "someone-else"])),
    ).rejects.toMatchObject({
      code: "unauthorized",
    });
    await expect(
      several.verifiedEmail("d", await token(true, ["app", "someone-else"], { azp: "someone-else" })),
    ).rejects.toMatchObject({ code: "unauthorized" });
    expect(await several.verifiedEmail("d", await token(true, ["app", "someone-else"], { azp: "app" }))).toBe(
      "ada@example.com",
    );
    // A deployment listing two clients of one issuer: the token is checked as the one it names.
    const two = new OidcVerifier(
      ["web", "app"].map((audience) => ({
        issuer: ISSUER,
        jwksUri: `${base}/good`,
        audience,
        deployments: "*",
      })),
    );
    expect(await two.verifiedEmail("d", await token(true, ["web", "app"], { azp: "app" }))).toBe(
      "ada@example.com",
    );
  });
});
