import { afterEach, beforeEach, expect, it } from "vitest";
import { LIMITS } from "../../sdk/protocol/index.js";
import { tempDatabase } from "../../test/helpers/db.js";
import { EmailCodes, type UnsentCode } from "./email-codes.js";

let env: Awaited<ReturnType<typeof tempDatabase>>;
let sent: UnsentCode[];
let codes: EmailCodes;
beforeEach(async () => {
  env = await tempDatabase();
  sent = [];
  codes = new EmailCodes(env.db, { unsent: (code) => sent.push(code) });
});
afterEach(() => env.dispose());

const ask = (deployment: string, email: string, network: string) =>
  codes.start(deployment, email, () => 0, network);

it("mails an address's owner its code after another network spent the mailbox's other spellings", async () => {
  // Counted per mailbox at each deployment, whoever asked, five requests for victim+x<i>@ left
  // victim@ no mail and no code of its own to hand out: refused for 15 minutes.
  for (let i = 0; i < LIMITS.emailCodeRequestsPerAddress; i++)
    expect(await ask("app", `victim+x${i}@example.com`, "attacker-net")).toMatchObject({ sent: true });
  const owner = await ask("app", "victim@example.com", "victim-net");
  expect(owner).toEqual({ attempt: expect.any(String), sent: true });
  const code = sent.at(-1);
  expect(code?.email).toBe("victim@example.com");
  if (!("attempt" in owner)) throw new Error("refused");
  await codes.verify("app", "victim@example.com", code?.code, owner.attempt);
});

it("mails a mailbox at most the installation's limit from one network, every spelling and deployment together", async () => {
  let mailed = 0;
  for (const deployment of ["d1", "d2", "d3"])
    for (let i = 0; i < LIMITS.emailCodeRequestsPerAddress; i++) {
      const answer = await ask(deployment, `victim+${deployment}-${i}@example.com`, "attacker-net");
      if ("attempt" in answer && answer.sent) mailed++;
    }
  expect(mailed).toBe(LIMITS.emailCodeMailsPerAddress);
  expect(sent).toHaveLength(LIMITS.emailCodeMailsPerAddress);
  // The same network gets no more through the exact address, which has no code of its own yet.
  expect(await ask("d3", "victim@example.com", "attacker-net")).toMatchObject({
    limitedBy: "victim@example.com",
  });
  // Another network's count is its own.
  expect(await ask("d3", "victim@example.com", "victim-net")).toMatchObject({ sent: true });
});

it("keeps an exact address's 5 codes per deployment shared by every network, then hands out the newest", async () => {
  for (let i = 0; i < LIMITS.emailCodeRequestsPerAddress; i++)
    expect(await ask("app", "owner@example.com", `net-${i}`)).toMatchObject({ sent: true });
  const owner = await ask("app", "owner@example.com", "owner-net");
  expect(owner).toEqual({ attempt: expect.any(String), sent: false });
  expect(sent).toHaveLength(LIMITS.emailCodeRequestsPerAddress);
  if (!("attempt" in owner)) throw new Error("refused");
  await codes.verify("app", "owner@example.com", sent.at(-1)?.code, owner.attempt);
});
