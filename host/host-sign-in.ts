import { EmailCodes, type OidcIssuer, OidcVerifier, type UnsentCode } from "./auth/index.js";
import type { HostDatabase } from "./db/index.js";
import type { LogHub } from "./deployments/index.js";

/** How a host's end users sign in: the options of `startHost` that say it. */
export interface SignInOptions {
  smtpUrl?: string;
  emailFrom?: string;
  onUnsentCode?: (code: UnsentCode) => void;
  oidcIssuers?: OidcIssuer[];
}

/**
 * Email codes (sent over SMTP; without a transport, each code goes to `onUnsentCode`, else into
 * the host log, where the operator or `platform dev` finds it) and OIDC tokens of the issuers named.
 */
export function signInMethods(
  db: HostDatabase,
  logs: LogHub,
  options: SignInOptions,
): { emailCodes: EmailCodes; oidc: OidcVerifier } {
  return {
    emailCodes: new EmailCodes(db, {
      // biome-ignore lint/plugin: runs once at start-up
      ...(options.smtpUrl ? { smtpUrl: options.smtpUrl } : {}),
      ...(options.emailFrom ? { from: options.emailFrom } : {}),
      unsent:
        options.onUnsentCode ??
        ((unsent) =>
          logs.write({
            time: new Date().toISOString(),
            level: "info",
            message: "sign-in code",
            fields: {
              event: "email_code",
              deployment: unsent.deployment,
              email: unsent.email,
              code: unsent.code,
              note: "no SMTP transport is configured; the code is logged instead",
            },
            deployment: unsent.deployment,
            handler: "auth",
            platform: true,
            requestId: "-",
          })),
    }),
    oidc: new OidcVerifier(options.oidcIssuers ?? []),
  };
}
