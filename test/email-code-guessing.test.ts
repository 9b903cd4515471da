/**
 * Email sign-in against an attacker: concurrent wrong guesses, code requests in bulk, codes used
 * from another sign-in, and the request quota on auth routes. Codes travel through a real SMTP
 * server on loopback; every request is real HTTP.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { sendRequest } from "../cli/http.js";
import { LIMITS } from "../sdk/protocol/index.js";
import { startTestHost, type TestHost } from "./helpers/host.js";
import { type ReceivedMail, type SmtpInbox, startSmtpInbox } from "./helpers/smtp-inbox.js";

let host: TestHost;
let smtp: SmtpInbox;
let smtpUrl: string;
const inbox: ReceivedMail[] = [];

beforeAll(async () => {
  smtp = await startSmtpInbox(inbox);
  smtpUrl = smtp.url;
  host = await startTestHost({ smtpUrl });
  expect((await host.deployFixture("mail", "guest-upgrade")).status).toBe(201);
});
afterAll(async () => {
  await host.dispose();
  await smtp.close();
});

type Answer = {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Record<string, unknown> & { error?: { code: string; message: string } };
};

async function post(target: TestHost, path: string, body: unknown, token?: string): Promise<Answer> {
  const response = await sendRequest(`${target.deploymentUrl("mail")}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json", ...(token ? { authorization: `Bearer ${token}` } : {}) },
    body: JSON.stringify(body),
  });
  return { status: response.status, headers: response.headers, body: response.json() };
}

async function codeFor(email: string, mailsBefore: number): Promise<string> {
  for (let i = 0; i < 400; i++) {
    const mails = inbox.filter((m) => m.to === email);
    const code = mails.length > mailsBefore ? mails.at(-1)?.body.match(/is (\d{8})\./)?.[1] : undefined;
    if (code) return code;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  throw new Error(`no code arrived for ${email}`);
}

const mailsTo = (email: string) => inbox.filter((m) => m.to === email).length;

/** Starts a sign-in for `email`; returns the attempt handle and the code that was mailed. */
async function start(email: string): Promise<{ attempt: string; code: string }> {
  const before = mailsTo(email);
  const started = await post(host, "/__platform/auth/email/start", { email });
  expect(started.status).toBe(200);
  expect(started.body).toEqual({ sent: true, attempt: expect.any(String) });
  return { attempt: started.body.attempt as string, code: await codeFor(email, before) };
}

const wrongCode = (code: string) => (code === "00000000" ? "11111111" : "00000000");

describe("guessing codes", () => {
  it("counts concurrent wrong guesses atomically: the code dies after the limit", async () => {
    const { attempt, code } = await start("race@example.com");
    const guesses = LIMITS.emailCodeAttempts + 3;
    const answers = await Promise.all(
      Array.from({ length: guesses }, () =>
        post(host, "/__platform/auth/email/verify", {
          email: "race@example.com",
          code: wrongCode(code),
          attempt,
        }),
      ),
    );
    console.log(`concurrent wrong guesses: ${answers.map((a) => a.status).join(" ")}`);
    for (const answer of answers) expect(answer.status).toBe(401);
    const right = await post(host, "/__platform/auth/email/verify", {
      email: "race@example.com",
      code,
      attempt,
    });
    expect(right.status).toBe(401);
    expect(right.body.error?.message).toMatch(/request a new/);
  });

  it("takes a code with spaces around it, and refuses what is not its eight digits without spending a guess", async () => {
    // On a deployment of its own: the client's code requests to "mail" are counted by other tests.
    expect((await host.deployFixture("slips", "guest-upgrade")).status).toBe(201);
    const call = async (path: string, body: unknown) => {
      const response = await sendRequest(`${host.deploymentUrl("slips")}${path}`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(body),
      });
      return { status: response.status, body: response.json<Answer["body"]>() };
    };
    const before = mailsTo("slips@example.com");
    const started = await call("/__platform/auth/email/start", { email: "slips@example.com" });
    expect(started.status).toBe(200);
    const attempt = started.body.attempt as string;
    const code = await codeFor("slips@example.com", before);
    const verify = (typed: unknown) =>
      call("/__platform/auth/email/verify", { email: "slips@example.com", code: typed, attempt });
    // More slips than the code has guesses: a JSON number, a short code, letters, nothing.
    for (const slip of [
      Number(`1${code}`),
      "12345",
      "abcdefgh",
      "",
      null,
      "123456",
      "1234567",
      "123456789",
      Number(code),
    ]) {
      const answer = await verify(slip);
      expect(answer.status, JSON.stringify(slip)).toBe(400);
      expect(answer.body.error?.message).toMatch(/8 digits of the email, sent as a string/);
    }
    const signedIn = await verify(` ${code}\n`);
    expect(signedIn.status, JSON.stringify(signedIn.body)).toBe(200);
  });

  it("accepts the right code among concurrent wrong ones only while the budget lasts", async () => {
    const { attempt, code } = await start("mixed@example.com");
    const wrong = Array.from({ length: LIMITS.emailCodeAttempts - 1 }, () =>
      post(host, "/__platform/auth/email/verify", {
        email: "mixed@example.com",
        code: wrongCode(code),
        attempt,
      }),
    );
    const answers = await Promise.all([
      ...wrong,
      post(host, "/__platform/auth/email/verify", { email: "mixed@example.com", code, attempt }),
    ]);
    expect(answers.filter((a) => a.status === 200)).toHaveLength(1);
    // Used once: the same code again is refused.
    expect(
      (await post(host, "/__platform/auth/email/verify", { email: "mixed@example.com", code, attempt }))
        .status,
    ).toBe(401);
  });

  it("leaves a code working when others request codes for the same address", async () => {
    // Each request once replaced the address's one code: four anonymous requests voided the code
    // its owner was typing, and the fifth left the owner no request for 15 minutes.
    const victim = await start("typing@example.com");
    for (let i = 1; i < LIMITS.emailCodeRequestsPerAddress; i++) await start("typing@example.com");
    // Past the address's codes no mail goes out; the request gets a handle of the newest code.
    const more = await post(host, "/__platform/auth/email/start", { email: "typing@example.com" });
    expect(more.status).toBe(200);
    expect(more.body).toMatchObject({ sent: false });
    const signedIn = await post(host, "/__platform/auth/email/verify", {
      email: "typing@example.com",
      code: victim.code,
      attempt: victim.attempt,
    });
    expect(signedIn.status, JSON.stringify(signedIn.body)).toBe(200);
  });

  it("refuses a guest token that cannot be upgraded before spending the code on it", async () => {
    const { attempt, code } = await start("stale-guest@example.com");
    const stale = await post(
      host,
      "/__platform/auth/email/verify",
      { email: "stale-guest@example.com", code, attempt },
      "not.a.token",
    );
    expect(stale.status).toBe(401);
    const signedIn = await post(host, "/__platform/auth/email/verify", {
      email: "stale-guest@example.com",
      code,
      attempt,
    });
    expect(signedIn.status, JSON.stringify(signedIn.body)).toBe(200);
  });

  it("binds a code to the sign-in that asked for it", async () => {
    const { attempt, code } = await start("bound@example.com");
    const other = await post(host, "/__platform/auth/email/verify", {
      email: "bound@example.com",
      code,
      attempt: "not-the-handle",
    });
    expect(other.status).toBe(401);
    expect(other.body.error?.message).toMatch(/does not belong to this sign-in/);
    // The same answer for an address nobody asked a code for: it tells nobody who signs in.
    const nobody = await post(host, "/__platform/auth/email/verify", {
      email: "nobody-signs-in@example.com",
      code,
      attempt: "not-the-handle",
    });
    expect(nobody.status).toBe(401);
    expect(nobody.body.error).toEqual(other.body.error);
    const missing = await post(host, "/__platform/auth/email/verify", { email: "bound@example.com", code });
    expect(missing.status).toBe(400);
    // Refusals from elsewhere do not spend the asker's guesses.
    for (let i = 0; i < LIMITS.emailCodeAttempts + 1; i++)
      await post(host, "/__platform/auth/email/verify", {
        email: "bound@example.com",
        code: wrongCode(code),
        attempt: `${attempt}x`,
      });
    expect(
      (await post(host, "/__platform/auth/email/verify", { email: "bound@example.com", code, attempt }))
        .status,
    ).toBe(200);
  });
});

describe("requesting codes", () => {
  it("sends an address at most its codes, then hands out the newest code's handle, then 429", async () => {
    const email = "flood@example.com";
    const answers: Answer[] = [];
    for (let i = 0; i < LIMITS.emailCodeRequestsPerAddress + 9; i++)
      answers.push(await post(host, "/__platform/auth/email/start", { email }));
    const shape = answers.map((a) => (a.status === 200 ? (a.body.sent ? "sent" : "handle") : a.status));
    console.log(`code requests for one address: ${shape.join(" ")}`);
    expect(shape).toEqual([
      ...Array(LIMITS.emailCodeRequestsPerAddress).fill("sent"),
      ...Array(8).fill("handle"),
      429,
    ]);
    const refused = answers.at(-1);
    expect(refused?.body.error?.code).toBe("limit_exceeded");
    expect(refused?.body.error?.message).toMatch(/retry in \d+ s/);
    expect(Number(refused?.headers["retry-after"])).toBeGreaterThan(0);
    // Give stray mails time to arrive, then count them: no mail past the address's codes.
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(mailsTo(email)).toBe(LIMITS.emailCodeRequestsPerAddress);
  });

  it("lets an address's owner sign in with a code it received while others flood it", async () => {
    // Someone else asks for the address's codes (each costs them only their own allowance)...
    const email = "owner@example.com";
    for (let i = 0; i < LIMITS.emailCodeRequestsPerAddress; i++) await start(email);
    const newest = await codeFor(email, LIMITS.emailCodeRequestsPerAddress - 1);
    // ...and the owner, asking afterwards, gets no new mail but signs in with the newest one.
    const owner = await post(host, "/__platform/auth/email/start", { email });
    expect(owner.body).toEqual({ sent: false, attempt: expect.any(String) });
    const signedIn = await post(host, "/__platform/auth/email/verify", {
      email,
      code: newest,
      attempt: owner.body.attempt,
    });
    expect(signedIn.status, JSON.stringify(signedIn.body)).toBe(200);
  });

  it("takes only plain addresses, so a limit counts the mailbox mail goes to", async () => {
    const before = inbox.length;
    for (const email of [
      "<victim@example.com>",
      "victim@example.com(x)",
      "x,victim@example.com",
      '"Your account is suspended" <victim@example.com>',
      "victim@example.com;other@example.com",
    ]) {
      const answer = await post(host, "/__platform/auth/email/start", { email });
      expect(answer.status, email).toBe(400);
      expect(answer.body.error).toEqual({
        code: "bad_request",
        message: "A valid email address is required.",
      });
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(inbox.length).toBe(before);
  });

  it("limits codes per client address over many addresses", async () => {
    const other = await startTestHost({ smtpUrl });
    try {
      expect((await other.deployFixture("mail", "guest-upgrade")).status).toBe(201);
      let firstRefused = -1;
      for (let i = 0; i < LIMITS.emailCodeRequestsPerClient + 2 && firstRefused < 0; i++) {
        const answer = await post(other, "/__platform/auth/email/start", { email: `spray${i}@example.com` });
        if (answer.status === 429) {
          firstRefused = i;
          expect(answer.body.error?.message).toMatch(/retry in \d+ s/);
          expect(Number(answer.headers["retry-after"])).toBeGreaterThan(0);
        } else expect(answer.status).toBe(200);
      }
      expect(firstRefused).toBe(LIMITS.emailCodeRequestsPerClient);
    } finally {
      await other.dispose();
    }
  });

  it("mails an address at most its codes from every deployment together, per asking network", async () => {
    // One client asked every deployment of a host to mail a victim: 5 mails per deployment per
    // window, with a deployment id of the attacker's choosing in each.
    const other = await startTestHost({ smtpUrl, trustProxy: true });
    try {
      for (const id of ["m1", "m2", "m3"])
        expect((await other.deployFixture(id, "guest-upgrade")).status).toBe(201);
      const email = "victim@example.com";
      const ask = (id: string) =>
        sendRequest(`${other.deploymentUrl(id)}/__platform/auth/email/start`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ email }),
        });
      const shape: Array<string | number> = [];
      for (const id of ["m1", "m2", "m3"])
        for (let i = 0; i < LIMITS.emailCodeRequestsPerAddress; i++) {
          const answer = await ask(id);
          shape.push(
            answer.status === 200
              ? answer.json<{ sent: boolean }>().sent
                ? "sent"
                : "handle"
              : answer.status,
          );
        }
      // Past the installation's mails, a deployment with no live code for the address refuses.
      const perDeployment = LIMITS.emailCodeRequestsPerAddress;
      const mailed = LIMITS.emailCodeMailsPerAddress;
      expect(shape.filter((each) => each === "sent")).toHaveLength(mailed);
      expect(shape.slice(0, mailed)).toEqual(Array(mailed).fill("sent"));
      expect(shape.slice(mailed)).toEqual(Array(3 * perDeployment - mailed).fill(429));
      const refused = await ask("m3");
      expect(refused.json<{ error: { message: string } }>().error.message).toMatch(
        /Too many sign-in codes were requested for victim@example\.com; retry in \d+ s/,
      );
      // The address's owner, asking from elsewhere, still gets a code: the flood was not theirs.
      const owners = await sendRequest(`${other.deploymentUrl("m3")}/__platform/auth/email/start`, {
        method: "POST",
        headers: { "content-type": "application/json", "x-forwarded-for": "203.0.113.7" },
        body: JSON.stringify({ email }),
      });
      expect(owners.status, owners.text()).toBe(200);
      expect(owners.json<{ sent: boolean }>().sent).toBe(true);
      await new Promise((resolve) => setTimeout(resolve, 500));
      expect(mailsTo(email)).toBe(mailed + 1);
    } finally {
      await other.dispose();
    }
  });

  it("limits one client address's code requests over every deployment of the host", async () => {
    const other = await startTestHost();
    try {
      const ids = ["c1", "c2", "c3", "c4"];
      for (const id of ids) expect((await other.deployFixture(id, "guest-upgrade")).status).toBe(201);
      let sent = 0;
      let refusal: { status: number; message: string } | undefined;
      for (const id of ids)
        for (let i = 0; i < LIMITS.emailCodeRequestsPerClient && !refusal; i++) {
          const answer = await sendRequest(`${other.deploymentUrl(id)}/__platform/auth/email/start`, {
            method: "POST",
            headers: { "content-type": "application/json" },
            body: JSON.stringify({ email: `spread${sent}@example.com` }),
          });
          if (answer.status === 200) sent++;
          else
            refusal = {
              status: answer.status,
              message: answer.json<{ error: { message: string } }>().error.message,
            };
        }
      expect(sent).toBe(LIMITS.emailCodeRequestsPerClientHostWide);
      expect(refusal?.status).toBe(429);
      expect(refusal?.message).toMatch(/requested for your network address; retry in \d+ s/);
    } finally {
      await other.dispose();
    }
  });

  it("charges auth routes to the request quota", async () => {
    const small = await startTestHost({ requestQuota: { perSecond: 0.01, burst: 3 } });
    try {
      expect((await small.deployFixture("mail", "guest-upgrade")).status).toBe(201);
      const statuses: number[] = [];
      for (let i = 0; i < 5; i++) statuses.push((await post(small, "/__platform/auth/guest", {})).status);
      expect(statuses).toEqual([200, 200, 200, 429, 429]);
      // Also requests to an id that names no deployment, the same id again and again (each would
      // read the database); ids varied each time get a bucket each, as app calls do.
      const unknown: number[] = [];
      for (let i = 0; i < 5; i++)
        unknown.push(
          (
            await sendRequest(`${small.deploymentUrl("nosuch")}/__platform/auth/guest`, {
              method: "POST",
              headers: { "content-type": "application/json" },
              body: "{}",
            })
          ).status,
        );
      expect(unknown).toEqual([404, 404, 404, 429, 429]);
    } finally {
      await small.dispose();
    }
  });
});
