import { Readable } from "node:stream";
import {
  CreateBucketCommand,
  DeleteObjectCommand,
  GetObjectCommand,
  HeadBucketCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  S3Client,
} from "@aws-sdk/client-s3";
import { LIMITS } from "../../sdk/protocol/index.js";
import { type BlobStore, checkBlobKey } from "./blob-store.js";

/** Where an S3 (or S3-protocol) bucket is. Credentials come from the AWS SDK's usual chain. */
export interface S3Settings {
  /** e.g. `http://127.0.0.1:9000`; absent: AWS itself. */
  endpoint?: string;
  bucket: string;
  region?: string;
  /** Path-style URLs (`<endpoint>/<bucket>/<key>`), which S3-protocol servers expect. Default true. */
  forcePathStyle?: boolean;
  credentials?: { accessKeyId: string; secretAccessKey: string };
  /** Create the bucket when it does not exist (default false). */
  createBucket?: boolean;
}

function isMissing(error: unknown): boolean {
  const e = error as { name?: string; $metadata?: { httpStatusCode?: number } };
  return e?.name === "NoSuchKey" || e?.name === "NotFound" || e?.$metadata?.httpStatusCode === 404;
}

/**
 * Blobs as objects of one S3 bucket (`@aws-sdk/client-s3`, path-style by default, any endpoint), so
 * several hosts share them. S3 writes one object atomically: a reader sees all of a put or none
 * of it, as the blob-store interface requires. Checksum trailers are only sent when required, so
 * S3-protocol servers that do not know them work too.
 */
export class S3BlobStore implements BlobStore {
  private constructor(
    private readonly client: S3Client,
    private readonly bucket: string,
  ) {}

  /** Connects, checking the bucket (creating it when asked to). */
  static async open(settings: S3Settings): Promise<S3BlobStore> {
    const client = new S3Client({
      region: settings.region ?? "us-east-1",
      forcePathStyle: settings.forcePathStyle ?? true,
      ...(settings.endpoint ? { endpoint: settings.endpoint } : {}),
      ...(settings.credentials ? { credentials: settings.credentials } : {}),
      requestChecksumCalculation: "WHEN_REQUIRED",
      responseChecksumValidation: "WHEN_REQUIRED",
      requestHandler: {
        connectionTimeout: LIMITS.s3ConnectMs,
        requestTimeout: LIMITS.s3AnswerMs,
        throwOnRequestTimeout: true,
        socketTimeout: LIMITS.s3SilenceMs,
      },
    });
    try {
      try {
        await client.send(new HeadBucketCommand({ Bucket: settings.bucket }));
      } catch (error) {
        if (!settings.createBucket || !isMissing(error)) throw error;
        await client.send(new CreateBucketCommand({ Bucket: settings.bucket }));
      }
    } catch (error) {
      // A host that fails to start for its bucket keeps no connection to the server open.
      client.destroy();
      throw error;
    }
    return new S3BlobStore(client, settings.bucket);
  }

  async put(key: string, data: Uint8Array): Promise<void> {
    await this.client.send(
      new PutObjectCommand({
        Bucket: this.bucket,
        Key: checkBlobKey(key),
        Body: data,
        ContentLength: data.length,
      }),
    );
  }

  async get(key: string): Promise<Buffer | undefined> {
    try {
      const object = await this.client.send(
        new GetObjectCommand({ Bucket: this.bucket, Key: checkBlobKey(key) }),
      );
      return Buffer.from((await object.Body?.transformToByteArray()) ?? new Uint8Array());
    } catch (error) {
      if (isMissing(error)) return undefined;
      throw error;
    }
  }

  /**
   * Read whole first: a stream left unread by a slow client would hold one of the client's 50
   * sockets, and 50 such downloads would stall every other operation on the bucket. Its bytes are
   * counted with the answers not yet read (host/http/unsent-answers.ts).
   */
  async stream(key: string): Promise<Readable | undefined> {
    const bytes = await this.get(key);
    return bytes ? Readable.from([bytes]) : undefined;
  }

  async delete(key: string): Promise<void> {
    await this.client.send(new DeleteObjectCommand({ Bucket: this.bucket, Key: checkBlobKey(key) }));
  }

  async list(prefix: string): Promise<string[]> {
    const keys: string[] = [];
    let token: string | undefined;
    do {
      const page = await this.client.send(
        new ListObjectsV2Command({
          Bucket: this.bucket,
          Prefix: prefix,
          ...(token ? { ContinuationToken: token } : {}),
        }),
      );
      for (const object of page.Contents ?? []) if (object.Key) keys.push(object.Key);
      token = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (token);
    return keys.sort();
  }

  /** The bucket answers a `HEAD` (no object is read). */
  async ready(signal: AbortSignal): Promise<void> {
    await this.client.send(new HeadBucketCommand({ Bucket: this.bucket }), { abortSignal: signal });
  }

  /** Closes the client's connections. */
  close(): void {
    this.client.destroy();
  }
}
