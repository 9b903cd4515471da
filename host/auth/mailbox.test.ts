import { expect, it } from "vitest";
import { mailboxKey } from "./mailbox.js";

it("counts an address's +tag variants as its mailbox, at every domain", () => {
  expect(mailboxKey("victim+1@example.com")).toBe("victim@example.com");
  expect(mailboxKey("victim+a+b@example.com")).toBe("victim@example.com");
  expect(mailboxKey("victim@example.com")).toBe("victim@example.com");
  // Dots count elsewhere: first.last@example.com is not firstlast@example.com.
  expect(mailboxKey("first.last+x@example.com")).toBe("first.last@example.com");
});

it("counts Gmail's dotted forms and googlemail.com as one mailbox", () => {
  for (const email of ["v.i.c.tim@gmail.com", "victim+x@googlemail.com", "vic.tim+1.2@gmail.com"])
    expect(mailboxKey(email), email).toBe("victim@gmail.com");
  expect(mailboxKey("victim@mail.gmail.com")).toBe("victim@mail.gmail.com");
});

it("keeps a local part that is only a tag as it is", () => {
  expect(mailboxKey("+tag@example.com")).toBe("+tag@example.com");
});

it("takes a domain named like an object's property as any other", () => {
  expect(mailboxKey("a.b@constructor")).toBe("a.b@constructor");
  expect(mailboxKey("a.b+x@__proto__")).toBe("a.b@__proto__");
});
