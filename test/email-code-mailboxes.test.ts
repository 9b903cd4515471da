/**
 * Sign-in mails are limited per mailbox, not per spelling of an address: `victim+1@…`,
 * `victim+2@…` (and Gmail's dotted forms) all land in one inbox, and each had limits of its own,
 * so one client put 98 mails into it in a window (an attack review). Codes still go to, and sign
 * in, the exact address typed. Real SMTP on loopback, real HTTP.
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

async function askCode(host: TestHost, deployment: string, email: string) {
  const answer = await sendRequest(`${host.deploymentUrl(deployment)}/__platform/auth/email/start`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ email }),
  });
  return { status: answer.status, body: answer.json<{ sent?: boolean; attempt?: string }>() };
}

/** Mails whose recipient is in the mailbox `local@domain` (tags and, for Gmail, dots aside). */
const inMailbox = (match: RegExp) => inbox.filter((mail) => match.test(mail.to));

describe("sign-in mails per mailbox", () => {
  it("count an address's +tag variants as one mailbox, every deployment together", async () => {
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
      // Each deployment mails the mailbox its 5 codes at most, and the installation its 10 from
      // this client's network (it was 5 per tagged spelling: 98 in all).
      for (const count of sentBy.values())
        expect(count).toBeLessThanOrEqual(LIMITS.emailCodeRequestsPerAddress);
      expect([...sentBy.values()].reduce((a, b) => a + b, 0)).toBe(LIMITS.emailCodeMailsPerAddress);
      await new Promise((resolve) => setTimeout(resolve, 500));
      const landed = inMailbox(/^victim(\+[^@]*)?@example\.com$/);
      expect(landed).toHaveLength(LIMITS.emailCodeMailsPerAddress);
      // Each went to the exact address asked for.
      expect(landed.every((mail) => /^victim\+p[12]-\d+@example\.com$/.test(mail.to))).toBe(true);
    } finally {
      await host.dispose();
    }
  });

  it("count Gmail's dotted forms and googlemail.com as one mailbox, and sign the exact address in", async () => {
    const host = await startTestHost({ smtpUrl: smtp.url });
    try {
      expect((await host.deployFixture("g", "guest-upgrade")).status).toBe(201);
      const spellings = ["j.doe@gmail.com", "jd.oe@googlemail.com", "jdoe+x@gmail.com", "j.d.o.e@gmail.com"];
      const answers = [];
      for (let i = 0; i < 2 * LIMITS.emailCodeRequestsPerAddress; i++)
        answers.push(await askCode(host, "g", spellings[i % spellings.length] as string));
      expect(answers.filter((answer) => answer.body.sent)).toHaveLength(LIMITS.emailCodeRequestsPerAddress);
      await new Promise((resolve) => setTimeout(resolve, 500));
      expect(inMailbox(/@(gmail|googlemail)\.com$/)).toHaveLength(LIMITS.emailCodeRequestsPerAddress);
      // The code of a dotted spelling signs that spelling in: an account is the address typed.
      const mail = inbox.find((each) => each.to === "j.doe@gmail.com");
      const code = mail?.body.match(/is (\d{6})\./)?.[1];
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
});
