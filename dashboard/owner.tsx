/** The owner fields of a deployment as `GET /v1/deploys` shows them. */
export interface OwnerFields {
  owner: string | null;
  ownerName?: string | null;
  ownerEmail?: string | null;
}

/**
 * A deployment's owner as people know them: the developer's name and email when they gave them,
 * with the developer id still shown (small) and in the tooltip, so it can be copied for the CLI.
 */
export function Owner({ deployment }: { deployment: OwnerFields }) {
  const { owner, ownerName, ownerEmail } = deployment;
  if (owner === null) return <span className="muted">nobody</span>;
  const known = [ownerName, ownerEmail && `<${ownerEmail}>`].filter(Boolean).join(" ");
  if (!known) return <code>{owner}</code>;
  return (
    <span className="owner" title={owner}>
      {known} <code className="muted">{owner}</code>
    </span>
  );
}
