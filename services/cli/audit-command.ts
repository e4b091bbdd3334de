import { readFile } from "node:fs/promises";
import { parseArgs } from "node:util";
import { exportPKCS8, exportSPKI, generateKeyPair, importSPKI } from "jose";
import type { HubConnection } from "../../shared/hub/index.ts";
import type { IndexStore } from "../../shared/search/index.ts";
import {
  type AuditReport,
  auditRecords,
  fileRecords,
  readViews,
  streamRecords,
} from "../audit/index.ts";
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
  const keyOption = publicKey ? { publicKey } : {};
  if (values.file) {
    const report = await auditRecords(fileRecords(await readFile(values.file, "utf8")), keyOption);
    return printReport(io, { report, checked: publicKey !== undefined });
  }
  const hub = await connect(values["nats-url"]);
  try {
    const partitions = partitionsToVerify(hub.layout.partitions, values.partition);
    if (typeof partitions === "string") {
      io.stderr(`${partitions}\n`);
      return 2;
    }
    let failed = 0;
    for (const p of partitions) {
      // The index keeps one position, so it is compared on a single-partition hub.
      const index = hub.layout.partitions === 1 ? await openIndex?.() : undefined;
      try {
        // The span before reading: what is appended meanwhile lies after it and is read too.
        const stream = hub.layout.stream(p);
        const { state } = await hub.jsm.streams.info(stream);
        const views = await readViews(hub.views(p));
        const report = await auditRecords(streamRecords(hub.js, stream), {
          views,
          expected: { firstSeq: state.first_seq, lastSeq: state.last_seq },
          ...(index ? { index: index.scan(1_000) } : {}),
          ...keyOption,
        });
        const label = hub.layout.partitions > 1 ? `partition ${p}: ` : "";
        failed += printReport(io, { report, checked: publicKey !== undefined, label });
      } finally {
        await index?.close();
      }
    }
    return failed > 0 ? 1 : 0;
  } finally {
    await hub.drain();
  }
}

/** The partitions `--partition` names (default: all), or what is wrong with it. */
function partitionsToVerify(count: number, flag: string | undefined): number[] | string {
  if (flag === undefined) return Array.from({ length: count }, (_, p) => p);
  const p = Number(flag);
  if (!/^[0-9]+$/.test(flag) || p >= count) {
    return `--partition takes a partition from 0 to ${count - 1}, got '${flag}'`;
  }
  return [p];
}

/** Prints one report; 1 when it found a divergence or a chain problem, else 0. */
function printReport(
  io: CommandIo,
  input: { report: AuditReport; checked: boolean; label?: string },
): number {
  const { report, label = "" } = input;
  for (const d of report.divergences) {
    io.stdout(
      `${label}DIVERGENCE job=${d.job} field=${d.field} view=${JSON.stringify(d.view)} replayed=${JSON.stringify(d.replayed)}\n`,
    );
  }
  for (const d of report.indexDivergences) {
    io.stdout(
      `${label}INDEX DIVERGENCE job=${d.job} field=${d.field} index=${JSON.stringify(d.view)} replayed=${JSON.stringify(d.replayed)}\n`,
    );
  }
  for (const p of report.chain.problems) io.stdout(`${label}CHAIN seq=${p.seq} ${p.problem}\n`);
  io.stdout(
    `${label}${report.events} events, ${report.jobs} jobs, ${report.chain.checkpoints} checkpoints (${report.chain.sealed} events sealed, ${report.chain.unsealed} not yet), ${report.divergences.length} divergences, ${report.chain.problems.length} chain problems, ${report.indexDivergences.length} index divergences${input.checked ? "" : " (signatures not checked: no --public-key)"}\n`,
  );
  const diverged = report.divergences.length + report.indexDivergences.length;
  return diverged > 0 || report.chain.problems.length > 0 ? 1 : 0;
}
