import { readFile } from "node:fs/promises";
import { parseArgs } from "node:util";
import { exportPKCS8, exportSPKI, generateKeyPair, importSPKI } from "jose";
import { TOPOLOGY } from "../../shared/bus/index.ts";
import type { HubConnection } from "../../shared/hub/index.ts";
import type { IndexStore } from "../../shared/search/index.ts";
import { auditRecords, fileRecords, readViews, streamRecords } from "../audit/index.ts";
import type { CommandIo } from "./events-command.ts";
import { AUDIT_VERIFY_OPTIONS } from "./options.ts";

/** `switchyard audit keygen`: an Ed25519 key pair for signing checkpoints (PKCS#8 / SPKI PEM). */
export async function runAuditKeygen(io: CommandIo): Promise<number> {
  const { privateKey, publicKey } = await generateKeyPair("EdDSA", {
    crv: "Ed25519",
    extractable: true,
  });
  io.stdout(
    `# private key: put it in audit.signing_key_pem (through an environment variable)\n${await exportPKCS8(privateKey)}\n# public key: give it to auditors (audit verify --public-key)\n${await exportSPKI(publicKey)}`,
  );
  return 0;
}

/**
 * `switchyard audit verify [--public-key file] [--file export.ndjson]`: replays the stream (or an
 * export) through the projector's evolve, compares every job view, recomputes the checkpoint chain
 * and checks signatures. Exit 1 on any divergence or chain problem.
 */
/**
 * Needs only what it uses: an export file, or a NATS URL (--nats-url, NATS_URL, or the hub of a
 * `switchyard up` in this folder); never the config file and the clients' secrets in it.
 */
export async function runAuditVerify(
  argv: string[],
  connect: (natsUrl: string | undefined) => Promise<HubConnection>,
  io: CommandIo,
  /** The search index to check too (issue 16); absent when the hub has none here. */
  openIndex?: () => Promise<IndexStore | undefined>,
): Promise<number> {
  const { values } = parseArgs({ args: argv, options: AUDIT_VERIFY_OPTIONS, strict: true });
  const publicKey = values["public-key"]
    ? await importSPKI(await readFile(values["public-key"], "utf8"), "EdDSA")
    : undefined;
  let report: Awaited<ReturnType<typeof auditRecords>>;
  if (values.file) {
    report = await auditRecords(fileRecords(await readFile(values.file, "utf8")), {
      ...(publicKey ? { publicKey } : {}),
    });
  } else {
    const hub = await connect(values["nats-url"]);
    const index = await openIndex?.();
    try {
      // The span before reading: what is appended meanwhile lies after it and is read too.
      const { state } = await hub.jsm.streams.info(TOPOLOGY.eventsStream);
      const views = await readViews(hub.jobs);
      report = await auditRecords(streamRecords(hub.js), {
        views,
        expected: { firstSeq: state.first_seq, lastSeq: state.last_seq },
        ...(index ? { index: index.scan(1_000) } : {}),
        ...(publicKey ? { publicKey } : {}),
      });
    } finally {
      await index?.close();
      await hub.drain();
    }
  }
  for (const d of report.divergences) {
    io.stdout(
      `DIVERGENCE job=${d.job} field=${d.field} view=${JSON.stringify(d.view)} replayed=${JSON.stringify(d.replayed)}\n`,
    );
  }
  for (const d of report.indexDivergences) {
    io.stdout(
      `INDEX DIVERGENCE job=${d.job} field=${d.field} index=${JSON.stringify(d.view)} replayed=${JSON.stringify(d.replayed)}\n`,
    );
  }
  for (const p of report.chain.problems) io.stdout(`CHAIN seq=${p.seq} ${p.problem}\n`);
  io.stdout(
    `${report.events} events, ${report.jobs} jobs, ${report.chain.checkpoints} checkpoints (${report.chain.sealed} events sealed, ${report.chain.unsealed} not yet), ${report.divergences.length} divergences, ${report.chain.problems.length} chain problems, ${report.indexDivergences.length} index divergences${publicKey ? "" : " (signatures not checked: no --public-key)"}\n`,
  );
  const diverged = report.divergences.length + report.indexDivergences.length;
  return diverged > 0 || report.chain.problems.length > 0 ? 1 : 0;
}
