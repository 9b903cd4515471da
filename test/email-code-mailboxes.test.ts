/**
 * Sign-in mails asked for from one client network are limited per mailbox, not per spelling of an
 * address: `victim+1@…`, `victim+2@…` (and Gmail's dotted forms) all land in one inbox, and each
 * had limits of its own, so one client put 98 mails into it in a window (an attack review). A
 * deployment's own limit stays per exact address, so that one network's spellings leave the
 * owner's address its codes. Codes go to, and sign in, the exact address typed. Real SMTP on
 * loopback, real HTTP.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { sendRequest } from "../cli/http.js";
import { LIMITS } from "../sdk/protocol/index.js";
import { startTestHost, type TestHost } from "./helpers/host.js";
import { type ReceivedMail, type SmtpInbox, startSmtpInbox } from "./helpers/smtp-inbox.js";

let smtp: SmtpInbox;
const inbox: ReceivedMail[] = [];

beforeAll(async () => {
  smtp = await startSmtpInbox(inbox);
});
afterAll(async () => {
  await smtp.close();
});

/** Asks `deployment` for a code for `email`, from `from` (an X-Forwarded-For address) if given. */
async function askCode(host: TestHost, deployment: string, email: string, from?: string) {
  const answer = await sendRequest(`${host.deploymentUrl(deployment)}/__platform/auth/email/start`, {
    method: "POST",
    headers: { "content-type": "application/json", ...(from ? { "x-forwarded-for": from } : {}) },
    body: JSON.stringify({ email }),
  });
  return { status: answer.status, body: answer.json<{ sent?: boolean; attempt?: string }>() };
}

/** Mails whose recipient is in the mailbox `local@domain` (tags and, for Gmail, dots aside). */
const inMailbox = (match: RegExp) => inbox.filter((mail) => match.test(mail.to));

describe("sign-in mails per mailbox", () => {
  it("count an address's +tag variants as one mailbox, every deployment together, per network", async () => {
    const host = await startTestHost({ smtpUrl: smtp.url });
    try {
      const deployments = ["p1", "p2", "p3", "p4"];
      for (const id of deployments) expect((await host.deployFixture(id, "guest-upgrade")).status).toBe(201);
      const sentBy = new Map<string, number>();
      for (const id of deployments)
        for (let i = 0; i < LIMITS.emailCodeRequestsPerClient; i++) {
          const answer = await askCode(host, id, `victim+${id}-${i}@example.com`);
          expect([200, 429]).toContain(answer.status);
          if (answer.body.sent) sentBy.set(id, (sentBy.get(id) ?? 0) + 1);
        }
      // The installation mails the mailbox 10 from this client's network (it was 5 per tagged
      // spelling: 98 in all). A deployment's 5 count each exact spelling, so the first deployment
      // asked sends all 10 (counted per mailbox there, whoever asked, they locked the owner out).
      expect(sentBy).toEqual(new Map([["p1", LIMITS.emailCodeMailsPerAddress]]));
      await new Promise((resolve) => setTimeout(resolve, 500));
      const landed = inMailbox(/^victim(\+[^@]*)?@example\.com$/);
      expect(landed).toHaveLength(LIMITS.emailCodeMailsPerAddress);
      // Each went to the exact address asked for.
      expect(landed.every((mail) => /^victim\+p1-\d+@example\.com$/.test(mail.to))).toBe(true);
    } finally {
      await host.dispose();
    }
  });

  it("count the networks of one IPv6 site (its /48) as one network", async () => {
    const host = await startTestHost({ smtpUrl: smtp.url, trustProxy: true });
    try {
      expect((await host.deployFixture("p1", "guest-upgrade")).status).toBe(201);
      let sent = 0;
      // Each request from another /64 of one /48, as one attacker's site has 65,536 of them.
      for (let i = 0; i < 3 * LIMITS.emailCodeMailsPerAddress; i++) {
        const answer = await askCode(host, "p1", `site+${i}@example.com`, `2001:db8:7:${i.toString(16)}::1`);
        expect([200, 429]).toContain(answer.status);
        if (answer.body.sent) sent++;
      }
      expect(sent).toBe(LIMITS.emailCodeMailsPerAddress);
      // Another site is counted apart.
      expect((await askCode(host, "p1", "site+other@example.com", "2001:db8:8::1")).body.sent).toBe(true);
    } finally {
      await host.dispose();
    }
  });

  it("count Gmail's dotted forms and googlemail.com as one mailbox, and sign the exact address in", async () => {
    const host = await startTestHost({ smtpUrl: smtp.url });
    try {
      expect((await host.deployFixture("g", "guest-upgrade")).status).toBe(201);
      const spellings = ["j.doe@gmail.com", "jd.oe@googlemail.com", "jdoe+x@gmail.com", "j.d.o.e@gmail.com"];
      // Each spelling asked for 5 times, within its own 5 at this deployment: the network's 10 for
      // the mailbox bound them (counted per spelling, all 20 went out).
      const answers = [];
      for (let i = 0; i < 2 * LIMITS.emailCodeMailsPerAddress; i++)
        answers.push(await askCode(host, "g", spellings[i % spellings.length] as string));
      expect(answers.filter((answer) => answer.body.sent)).toHaveLength(LIMITS.emailCodeMailsPerAddress);
      await new Promise((resolve) => setTimeout(resolve, 500));
      expect(inMailbox(/@(gmail|googlemail)\.com$/)).toHaveLength(LIMITS.emailCodeMailsPerAddress);
      // The code of a dotted spelling signs that spelling in: an account is the address typed.
      const mail = inbox.find((each) => each.to === "j.doe@gmail.com");
      const code = mail?.body.match(/is (\d{8})\./)?.[1];
      const verified = await sendRequest(`${host.deploymentUrl("g")}/__platform/auth/email/verify`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ email: "j.doe@gmail.com", code, attempt: answers[0]?.body.attempt }),
      });
      expect(verified.status, verified.text()).toBe(200);
      expect(verified.json<{ email: string }>().email).toBe("j.doe@gmail.com");
    } finally {
      await host.dispose();
    }
  });

  it("leave an address's owner its code when another network spent the mailbox's other spellings", async () => {
    // Counted per mailbox at each deployment whoever asked, an attacker's five requests for
    // owner+x<i>@ left owner@ no mail, and no code of its own to hand out: 429 for 15 minutes.
    const host = await startTestHost({ smtpUrl: smtp.url, trustProxy: true });
    try {
      expect((await host.deployFixture("o", "guest-upgrade")).status).toBe(201);
      for (let i = 0; i < LIMITS.emailCodeRequestsPerAddress; i++) {
        const answer = await askCode(host, "o", `owner+x${i}@example.com`, "198.51.100.9");
        expect(answer.body.sent, JSON.stringify(answer.body)).toBe(true);
      }
      const owner = await askCode(host, "o", "owner@example.com", "203.0.113.7");
      expect(owner.status, JSON.stringify(owner.body)).toBe(200);
      expect(owner.body.sent).toBe(true);
      let code: string | undefined;
      for (let i = 0; i < 400 && !code; i++) {
        code = inbox.find((mail) => mail.to === "owner@example.com")?.body.match(/is (\d{8})\./)?.[1];
        if (!code) await new Promise((resolve) => setTimeout(resolve, 25));
      }
      const verified = await sendRequest(`${host.deploymentUrl("o")}/__platform/auth/email/verify`, {
        method: "POST",
        headers: { "content-type": "application/json", "x-forwarded-for": "203.0.113.7" },
        body: JSON.stringify({ email: "owner@example.com", code, attempt: owner.body.attempt }),
      });
      expect(verified.status, verified.text()).toBe(200);
      expect(verified.json<{ email: string }>().email).toBe("owner@example.com");
    } finally {
      await host.dispose();
    }
  });
});
