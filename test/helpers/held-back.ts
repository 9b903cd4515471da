import { request } from "node:http";

/**
 * Starts `method url` with `body` as `token`, sending all but its last byte, so a test can set up a
 * race while the host waits for the rest; resolves (after letting the host read the headers and
 * run its first checks) with a function that sends the rest and resolves with the answer.
 */
export async function heldBack(
  method: string,
  url: string,
  token: string,
  body: Buffer,
  contentType = "application/json",
): Promise<() => Promise<{ status: number; text: string }>> {
  let finish = () => {};
  const answer = new Promise<{ status: number; text: string }>((resolve, reject) => {
    const req = request(
      new URL(url),
      {
        method,
        headers: {
          authorization: `Bearer ${token}`,
          "content-type": contentType,
          "content-length": body.length,
        },
      },
      (res) => {
        let received = "";
        res.on("data", (chunk: Buffer) => {
          received += chunk.toString();
        });
        res.on("end", () => resolve({ status: res.statusCode ?? 0, text: received }));
      },
    );
    req.on("error", reject);
    req.write(body.subarray(0, body.length - 1));
    finish = () => req.end(body.subarray(body.length - 1));
  });
  // Let the host read the headers and run its checks before the race is set (on a machine too
  // busy for that, the checks come after it: tests assert both outcomes where they differ).
  await new Promise((resolve) => setTimeout(resolve, 300));
  return () => {
    finish();
    return answer;
  };
}
