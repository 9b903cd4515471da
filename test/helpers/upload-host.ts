import { type HttpResponse, sendRequest } from "../../cli/http.js";
import { fixtureCode, startTestHost, type TestHost } from "./host.js";

/** A test host with one owned deployment, `files`, and a signed-in member who may upload to it. */
export interface UploadHost {
  host: TestHost;
  token: string;
  /** Uploads `body` declared as `type` (public when asked); answers the raw response. */
  upload(body: Buffer | string, type: string, isPublic?: boolean): Promise<HttpResponse>;
  /** Downloads a stored key as the member. */
  download(key: string): Promise<HttpResponse>;
}

/** Starts a host ready for upload tests (dispose it with `host.dispose()`). */
export async function startUploadHost(): Promise<UploadHost> {
  const host = await startTestHost();
  const owner = (await host.admin("/v1/developers", "POST", { name: "owner" })).json<{ id: string }>();
  await host.admin("/v1/deploys", "POST", {
    id: "files",
    code: await fixtureCode("access"),
    owner: owner.id,
  });
  const token = (
    await host.admin("/v1/deploys/files/sessions", "POST", { email: "member@example.com" })
  ).json<{ token: string }>().token;
  const origin = host.deploymentUrl("files");
  const authorization = `Bearer ${token}`;
  return {
    host,
    token,
    upload: (body, type, isPublic = false) =>
      sendRequest(`${origin}/storage${isPublic ? "?public=true" : ""}`, {
        method: "POST",
        headers: { authorization, "content-type": type },
        body,
      }),
    download: (key) => sendRequest(`${origin}/storage/${key}`, { headers: { authorization } }),
  };
}
