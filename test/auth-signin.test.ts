/**
 * Account sign-in end to end, without a browser: email one-time codes through a real SMTP server
 * started on loopback, and OpenID Connect ID tokens verified against a JWKS served by the test.
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { exportJWK, generateKeyPair, SignJWT } from "jose";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { sendRequest } from "../cli/http.js";
import { startTestHost, type TestHost } from "./helpers/host.js";
import { type ReceivedMail, type SmtpInbox, startSmtpInbox } from "./helpers/smtp-inbox.js";

let host: TestHost;
let smtp: SmtpInbox;
let jwks: Server;
const inbox: ReceivedMail[] = [];
let privateKey: Awaited<ReturnType<typeof generateKeyPair>>["privateKey"];
const ISSUER = "https://idp.example";
const AUDIENCE = "client-123";
/** The client id of the second deployment's app, at the same identity provider. */
const OTHER_AUDIENCE = "client-456";

beforeAll(async () => {
  smtp = await startSmtpInbox(inbox);

  const pair = await generateKeyPair("RS256");
  privateKey = pair.privateKey;
  const publicJwk = { ...(await exportJWK(pair.publicKey)), kid: "k1", alg: "RS256", use: "sig" };
  jwks = createServer((_req, res) => {
    res.setHeader("content-type", "application/json");
    res.end(JSON.stringify({ keys: [publicJwk] }));
  });
  await new Promise<void>((resolve) => jwks.listen(0, "127.0.0.1", resolve));
  const jwksPort = (jwks.address() as AddressInfo).port;

  host = await startTestHost({
    smtpUrl: smtp.url,
    emailFrom: "platform <signin@example.com>",
    oidcIssuers: [
      {
        issuer: ISSUER,
        jwksUri: `http://127.0.0.1:${jwksPort}/jwks`,
        audience: AUDIENCE,
        deployments: ["mail"],
      },
      {
        issuer: ISSUER,
        jwksUri: `http://127.0.0.1:${jwksPort}/jwks`,
        audience: OTHER_AUDIENCE,
        deployments: ["shop"],
      },
    ],
  });
  expect((await host.deployFixture("mail", "guest-upgrade")).status).toBe(201);
  expect((await host.deployFixture("shop", "guest-upgrade")).status).toBe(201);
  expect((await host.deployFixture("blog", "guest-upgrade")).status).toBe(201);
});
afterAll(async () => {
  await host.dispose();
  await smtp.close();
  await new Promise<void>((resolve) => jwks.close(() => resolve()));
});

async function post(path: string, body: unknown, token?: string, deployment = "mail") {
  const response = await sendRequest(`${host.deploymentUrl(deployment)}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json", ...(token ? { authorization: `Bearer ${token}` } : {}) },
    body: JSON.stringify(body),
  });
  return {
    status: response.status,
    body: response.json<Record<string, unknown> & { error?: { code: string; message: string } }>(),
  };
}

async function codeFor(email: string): Promise<string> {
  for (let i = 0; i < 100; i++) {
    const message = inbox.filter((m) => m.to === email).at(-1);
    const code = message?.body.match(/sign-in code for \S+ is (\d{8})/)?.[1];
    if (code) return code;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`no code arrived for ${email}`);
}

describe("email one-time codes over SMTP", () => {
  it("sends a code, signs in with it once, and upgrades the guest that asked", async () => {
    const guest = await post("/__platform/auth/guest", {});
    await post("/api/mutation/addNote", { text: "written as a guest" }, guest.body.token as string);
    const started = await post("/__platform/auth/email/start", { email: "Reader@Example.com" });
    expect(started.body).toEqual({
      sent: true,
      attempt: expect.any(String),
    });
    const attempt = started.body.attempt;
    const code = await codeFor("reader@example.com");
    expect(
      (
        await post("/__platform/auth/email/verify", {
          email: "reader@example.com",
          code: code === "00000000" ? "11111111" : "00000000",
          attempt,
        })
      ).status,
    ).toBe(401);
    const verified = await post(
      "/__platform/auth/email/verify",
      { email: "reader@example.com", code, attempt },
      guest.body.token as string,
    );
    expect(verified.status).toBe(200);
    expect(verified.body).toMatchObject({
      kind: "account",
      email: "reader@example.com",
      upgradedFrom: guest.body.userId,
    });
    const notes = await post("/api/query/myNotes", {}, verified.body.token as string);
    expect(notes.body.value).toEqual(["written as a guest"]);
    expect(
      (await post("/__platform/auth/email/verify", { email: "reader@example.com", code, attempt })).status,
    ).toBe(401);
  });

  it("locks a code after five wrong guesses", async () => {
    const { attempt } = (await post("/__platform/auth/email/start", { email: "guess@example.com" })).body;
    const code = await codeFor("guess@example.com");
    const wrong = code === "12345678" ? "87654321" : "12345678";
    for (let i = 0; i < 5; i++)
      expect(
        (await post("/__platform/auth/email/verify", { email: "guess@example.com", code: wrong, attempt }))
          .status,
      ).toBe(401);
    expect(
      (await post("/__platform/auth/email/verify", { email: "guess@example.com", code, attempt })).status,
    ).toBe(401);
  });

  it("refuses malformed addresses", async () => {
    expect((await post("/__platform/auth/email/start", { email: "not-an-email" })).status).toBe(400);
  });
});

describe("OpenID Connect ID tokens", () => {
  const idToken = (
    claims: Record<string, unknown>,
    options: { issuer?: string; audience?: string; expiresIn?: string } = {},
  ) =>
    new SignJWT(claims)
      .setProtectedHeader({ alg: "RS256", kid: "k1" })
      .setIssuer(options.issuer ?? ISSUER)
      .setAudience(options.audience ?? AUDIENCE)
      .setSubject("idp-user-1")
      .setIssuedAt()
      .setExpirationTime(options.expiresIn ?? "5m")
      .sign(privateKey);

  it("exchanges a verified ID token for an account token", async () => {
    const reply = await post("/__platform/auth/oidc", {
      idToken: await idToken({ email: "oidc@example.com", email_verified: true }),
    });
    expect(reply.status).toBe(200);
    expect(reply.body).toMatchObject({ kind: "account", email: "oidc@example.com" });
    expect((await post("/api/query/mustBeAccount", {}, reply.body.token as string)).body.value).toBe(
      "oidc@example.com",
    );
  });

  it("refuses unverified emails, other audiences and issuers, expired and forged tokens", async () => {
    expect(
      (
        await post("/__platform/auth/oidc", {
          idToken: await idToken({ email: "x@example.com", email_verified: false }),
        })
      ).status,
    ).toBe(403);
    expect(
      (
        await post("/__platform/auth/oidc", {
          idToken: await idToken({ email: "x@example.com", email_verified: true }, { audience: "other" }),
        })
      ).status,
    ).toBe(401);
    expect(
      (
        await post("/__platform/auth/oidc", {
          idToken: await idToken(
            { email: "x@example.com", email_verified: true },
            { issuer: "https://evil.example" },
          ),
        })
      ).status,
    ).toBe(401);
    const expired = await new SignJWT({ email: "x@example.com", email_verified: true })
      .setProtectedHeader({ alg: "RS256", kid: "k1" })
      .setIssuer(ISSUER)
      .setAudience(AUDIENCE)
      .setIssuedAt(Math.floor(Date.now() / 1000) - 7200)
      .setExpirationTime(Math.floor(Date.now() / 1000) - 3600)
      .sign(privateKey);
    expect((await post("/__platform/auth/oidc", { idToken: expired })).status).toBe(401);
    const other = await generateKeyPair("RS256");
    const forged = await new SignJWT({ email: "x@example.com", email_verified: true })
      .setProtectedHeader({ alg: "RS256", kid: "k1" })
      .setIssuer(ISSUER)
      .setAudience(AUDIENCE)
      .setExpirationTime("5m")
      .sign(other.privateKey);
    expect((await post("/__platform/auth/oidc", { idToken: forged })).status).toBe(401);
    expect((await post("/__platform/auth/oidc", { idToken: 42 })).status).toBe(400);
  });

  it("signs in only at the deployments its client serves: a tenant cannot replay its users' tokens at another", async () => {
    // What a tenant's own page receives when its users sign in: a token for its client id.
    const mailToken = await idToken({ email: "victim@example.com", email_verified: true });
    const atShop = await post("/__platform/auth/oidc", { idToken: mailToken }, undefined, "shop");
    expect(atShop.status).toBe(401);
    expect(atShop.body.error?.code).toBe("unauthorized");
    const atBlog = await post("/__platform/auth/oidc", { idToken: mailToken }, undefined, "blog");
    expect(atBlog.status).toBe(401);
    expect(atBlog.body.error?.message).toBe(
      "Deployment blog accepts no ID tokens from that issuer: its operator lists the identity provider's clients each deployment accepts.",
    );
    // Each client's tokens work where it is listed, and only there.
    const shopToken = await idToken(
      { email: "victim@example.com", email_verified: true },
      { audience: OTHER_AUDIENCE },
    );
    const signedIn = await post("/__platform/auth/oidc", { idToken: shopToken }, undefined, "shop");
    expect(signedIn.status).toBe(200);
    expect(signedIn.body).toMatchObject({ kind: "account", email: "victim@example.com" });
    expect((await post("/__platform/auth/oidc", { idToken: shopToken })).status).toBe(401);
    expect((await post("/__platform/auth/oidc", { idToken: mailToken })).status).toBe(200);
  });
});

describe("without SMTP", () => {
  it("writes the code to the host log", async () => {
    const bare = await startTestHost();
    try {
      expect((await bare.deployFixture("quiet", "guest-upgrade")).status).toBe(201);
      const started = await sendRequest(`${bare.deploymentUrl("quiet")}/__platform/auth/email/start`, {
        method: "POST",
        body: JSON.stringify({ email: "log@example.com" }),
      });
      const { attempt } = started.json<{ attempt: string }>();
      const line = bare.logs.find(
        (entry) => (entry as { fields?: { email?: string } }).fields?.email === "log@example.com",
      ) as { fields: { code: string } };
      expect(line.fields.code).toMatch(/^\d{8}$/);
      const signedIn = await sendRequest(`${bare.deploymentUrl("quiet")}/__platform/auth/email/verify`, {
        method: "POST",
        body: JSON.stringify({ email: "log@example.com", code: line.fields.code, attempt }),
      });
      expect(signedIn.status).toBe(200);
    } finally {
      await bare.dispose();
    }
  });
});
