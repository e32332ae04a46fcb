/** SigV4 for Function URLs with AWS_IAM auth: the AWS SDK's own signer and credential chain, service `lambda`. */
import { Sha256 } from "@aws-crypto/sha256-js";
import { defaultProvider } from "@aws-sdk/credential-provider-node";
import { SignatureV4 } from "@smithy/signature-v4";

import { TicketsError } from "./errors.js";

// https://<url-id>.lambda-url.<region>.on.aws: only these need (and accept) a signature.
const FUNCTION_URL_HOST = /^[a-z0-9]+\.lambda-url\.([a-z0-9-]+)\.on\.aws$/;

/** The region of a Function URL host, or null for any other host (the local server, a proxy). */
export function functionUrlRegion(host: string): string | null {
  return FUNCTION_URL_HOST.exec(host.toLowerCase())?.[1] ?? null;
}

export interface AwsCredentials {
  readonly accessKeyId: string;
  readonly secretAccessKey: string;
  readonly sessionToken?: string;
}

/** Credentials, or a function that finds them (refreshing temporary ones), like the SDK's providers. */
export type CredentialSource = AwsCredentials | (() => Promise<AwsCredentials>);

/** `headers` signed (each attempt afresh: a signature is valid for 5 minutes; retries may outlast it). */
export type Signer = (method: string, url: URL, headers: Record<string, string>, body: string) => Promise<Record<string, string>>;

export function signer(region: string, credentials?: CredentialSource): Signer {
  const source = credentials ?? defaultProvider(); // a function is called (and may refresh) on every signature
  const sigv4 = new SignatureV4({ service: "lambda", region, credentials: source, sha256: Sha256, applyChecksum: false });
  return async (method, url, headers, body) => {
    const signing = sigv4.sign({
      method,
      protocol: url.protocol,
      hostname: url.hostname,
      ...(url.port ? { port: Number(url.port) } : {}),
      path: url.pathname,
      query: Object.fromEntries(url.searchParams),
      headers: { ...headers, host: url.host },
      body,
    });
    const signed = await signing.catch((err: Error) => {
      const said = "no AWS credentials for SigV4 (the SDK looks in the environment, ~/.aws config and SSO, a role)";
      throw new TicketsError(null, "no_credentials", `${said}: ${err.message}`);
    });
    const { host: _host, ...sent } = signed.headers; // fetch sends Host itself, from the URL: the signed value
    return sent;
  };
}
