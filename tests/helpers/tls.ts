/**
 * Test-only certificates made with openssl at test time in a temporary directory: a CA, a server
 * certificate for 127.0.0.1 and localhost (also a route's client certificate), a client
 * certificate, and a second CA with its own client certificate (one the server must refuse). No
 * private key is committed.
 */
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";

export interface TestPki extends AsyncDisposable {
  readonly dir: string;
  readonly caFile: string;
  readonly serverCert: string;
  readonly serverKey: string;
  readonly clientCert: string;
  readonly clientKey: string;
  /** Signed by another CA: a server trusting only caFile refuses it. */
  readonly rogueCaFile: string;
  readonly rogueClientCert: string;
  readonly rogueClientKey: string;
  /** A new key and certificate for the server, from the same CA, written over the old files. */
  reissueServer(): Promise<void>;
  remove(): Promise<void>;
}

async function openssl(args: readonly string[], cwd: string): Promise<void> {
  const child = Bun.spawn(["openssl", ...args], { cwd, stdout: "pipe", stderr: "pipe" });
  const code = await child.exited;
  if (code !== 0) {
    throw new Error(`openssl ${args[0]} failed: ${await new Response(child.stderr).text()}`);
  }
}

async function makeCa(dir: string, name: string): Promise<void> {
  await openssl(
    ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", `/CN=${name}`].concat([
      "-keyout",
      `${name}.key`,
      "-out",
      `${name}.pem`,
    ]),
    dir,
  );
}

interface Leaf {
  readonly dir: string;
  readonly ca: string;
  readonly name: string;
  readonly ext: string;
}

async function makeLeaf(leaf: Leaf): Promise<void> {
  const { dir, ca, name, ext } = leaf;
  await writeFile(join(dir, `${name}.ext`), ext);
  await openssl(
    ["req", "-newkey", "rsa:2048", "-nodes", "-subj", `/CN=${name}`].concat([
      "-keyout",
      `${name}.key`,
      "-out",
      `${name}.csr`,
    ]),
    dir,
  );
  await openssl(
    ["x509", "-req", "-in", `${name}.csr`, "-CA", `${ca}.pem`, "-CAkey", `${ca}.key`].concat([
      "-CAcreateserial",
      "-days",
      "2",
      "-extfile",
      `${name}.ext`,
      "-out",
      `${name}.pem`,
    ]),
    dir,
  );
}

/** Makes the certificates; remove() (or `await using`) deletes them. */
export async function makeTestPki(): Promise<TestPki> {
  const dir = await mkdtemp(join(tmpdir(), "switchyard-pki-"));
  await makeCa(dir, "ca");
  await makeCa(dir, "rogue-ca");
  const serverExt =
    "subjectAltName=IP:127.0.0.1,DNS:localhost,DNS:nats.test\nextendedKeyUsage=serverAuth,clientAuth\n";
  const clientExt = "extendedKeyUsage=clientAuth\n";
  const reissueServer = () => makeLeaf({ dir, ca: "ca", name: "server", ext: serverExt });
  await reissueServer();
  await makeLeaf({ dir, ca: "ca", name: "client", ext: clientExt });
  await makeLeaf({ dir, ca: "rogue-ca", name: "rogue-client", ext: clientExt });
  const remove = () => rm(dir, { recursive: true, force: true });
  const at = (file: string) => join(dir, file);
  return {
    dir,
    caFile: at("ca.pem"),
    serverCert: at("server.pem"),
    serverKey: at("server.key"),
    clientCert: at("client.pem"),
    clientKey: at("client.key"),
    rogueCaFile: at("rogue-ca.pem"),
    rogueClientCert: at("rogue-client.pem"),
    rogueClientKey: at("rogue-client.key"),
    reissueServer,
    remove,
    [Symbol.asyncDispose]: remove,
  };
}
