import type { AddressInfo } from "node:net";
import { SMTPServer } from "smtp-server";

/** A mail received by {@link startSmtpInbox}: its recipients (comma-separated) and raw message. */
export interface ReceivedMail {
  to: string;
  body: string;
}

/** A real SMTP server on loopback that keeps every mail, for tests that sign in by email code. */
export interface SmtpInbox {
  /** `smtp://127.0.0.1:<port>`, for the host's `smtpUrl`. */
  url: string;
  mails: ReceivedMail[];
  close(): Promise<void>;
}

/** Starts an SMTP server on a free loopback port that accepts every mail without auth or TLS. */
export async function startSmtpInbox(mails: ReceivedMail[] = []): Promise<SmtpInbox> {
  const smtp = new SMTPServer({
    authOptional: true,
    disabledCommands: ["STARTTLS", "AUTH"],
    onData(stream, session, callback) {
      let body = "";
      stream.on("data", (chunk: Buffer) => {
        body += chunk.toString();
      });
      stream.on("end", () => {
        mails.push({ to: session.envelope.rcptTo.map((r) => r.address).join(","), body });
        callback();
      });
    },
  });
  await new Promise<void>((resolve) => smtp.listen(0, "127.0.0.1", resolve));
  return {
    url: `smtp://127.0.0.1:${(smtp.server.address() as AddressInfo).port}`,
    mails,
    close: () => new Promise<void>((resolve) => smtp.close(() => resolve())),
  };
}
