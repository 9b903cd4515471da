/** Domains whose mail ignores dots in the local part, each named by the one it stands for. */
const DOTLESS_DOMAINS: Readonly<Record<string, string>> = {
  "gmail.com": "gmail.com",
  "googlemail.com": "gmail.com",
};

/**
 * The mailbox a normalised address delivers to, as the sign-in mail limits count it: the local
 * part without a `+tag` (any domain), and for Gmail without dots, googlemail.com as gmail.com.
 * Keyed by the exact address, `victim+1@…`, `victim+2@…` each had limits of their own, and one
 * client put about 100 mails a window into one inbox. Only limits use it: an account, and where
 * its code goes, stay the exact address (`a+b@` may be someone else's mailbox at some domains).
 */
export function mailboxKey(email: string): string {
  const at = email.lastIndexOf("@");
  const domain = email.slice(at + 1);
  let local = email.slice(0, at);
  const plus = local.indexOf("+");
  // "+tag@…" has no mailbox before its tag to count it as.
  if (plus > 0) local = local.slice(0, plus);
  const dotless = Object.hasOwn(DOTLESS_DOMAINS, domain) ? DOTLESS_DOMAINS[domain] : undefined;
  return dotless === undefined ? `${local}@${domain}` : `${local.replaceAll(".", "")}@${dotless}`;
}
