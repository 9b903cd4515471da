import { useState } from "react";

/** Puts `text` on the clipboard (the Clipboard API, else a selected text field and `copy`). */
async function writeClipboard(text: string): Promise<void> {
  if (navigator.clipboard && window.isSecureContext) {
    await navigator.clipboard.writeText(text);
    return;
  }
  const field = document.createElement("textarea");
  field.value = text;
  field.setAttribute("readonly", "");
  field.className = "offscreen";
  document.body.append(field);
  field.select();
  document.execCommand("copy");
  field.remove();
}

/** A small button that copies `text` and says so. */
export function CopyButton({ text, label }: { text: string; label: string }) {
  const [done, setDone] = useState<"" | "copied" | "failed">("");
  return (
    <button
      type="button"
      className="copy"
      aria-label={label}
      title={label}
      onClick={(event) => {
        event.stopPropagation();
        writeClipboard(text).then(
          () => setDone("copied"),
          () => setDone("failed"),
        );
        setTimeout(() => setDone(""), 1500);
      }}
    >
      {done === "copied" ? "Copied" : done === "failed" ? "Failed" : "Copy"}
    </button>
  );
}
