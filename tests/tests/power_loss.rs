//! Power loss, simulated at the WASI boundary ([`stowage::PowerLoss`]): the
//! filesystem adapter runs a mixed workload over a disk that keeps only what was
//! fsynced, and is cut off at random points (a random filesystem call of the
//! adapter traps, so the operation in flight is never acknowledged), thousands
//! of times. After each cut the directory holds what the disk would (unsynced
//! data lost, torn, or zero-filled; unsynced directory changes reverted, or under
//! the `Any` model each directory either reverted or committed), and a fresh
//! store on it must find every acknowledged write with its exact content and
//! seq, nothing torn, no half batch, contiguous seqs; and it must accept the
//! next write.
//!
//! Seeded and deterministic; the seed is printed. Environment:
//! - `STOWAGE_POWER_LOSS_SEED`: replay a run;
//! - `STOWAGE_POWER_LOSS_CUTS`: how many cuts (default 2,000);
//! - `STOWAGE_POWER_LOSS_ADAPTER`: a `.wasm` to run instead of the built-in
//!   filesystem adapter (a mutant with an fsync removed, say).

#[path = "power_loss/world.rs"]
mod world;

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, bail};
use stowage::{
    AdapterSource, Builtin, Capability, CutReport, Display, DisplayOptions, Grants, Limits, Metadata, PowerLoss,
    Runtime, Store, StoreConfig,
};
use stowage_tests::shared_runtime;
use world::{Conv, Op, Rng, World, diff, observe, run};

/// Crash points per round are drawn from `0..SPAN`: about as many as the
/// round's operations make, so most rounds crash inside one of them.
const SPAN: u64 = 48;
/// Syncs per round are drawn from `0..SYNC_SPAN` when a round crashes at a sync.
const SYNC_SPAN: u64 = 10;
/// Operations per round after the first (unarmed) write.
const OPS: usize = 4;
const CONVERSATIONS: usize = 3;

fn env_u64(name: &str) -> anyhow::Result<Option<u64>> {
    std::env::var(name).ok().map(|v| v.parse().with_context(|| format!("{name}={v} is not a number"))).transpose()
}

fn random_seed() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u128(std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos()));
    hasher.finish()
}

/// The operation in flight when the power went, and what it would leave.
struct InFlight {
    id: String,
    op: Op,
    after: Option<Conv>,
}

struct Run {
    runtime: Runtime,
    source: AdapterSource,
    data: PathBuf,
    disk: PowerLoss,
    rng: Rng,
    world: World,
    in_flight: Option<InFlight>,
    last_cut: Option<CutReport>,
    totals: Totals,
}

#[derive(Debug, Default)]
struct Totals {
    crashes: u64,
    cuts_between_calls: u64,
    acknowledged: u64,
    in_flight_took_effect: u64,
    files_torn: u64,
    files_lost: u64,
    dirs_reverted: u64,
    dirs_rolled_forward: u64,
}

impl Run {
    fn new(seed: u64, data: &Path) -> anyhow::Result<Self> {
        let source = match std::env::var_os("STOWAGE_POWER_LOSS_ADAPTER") {
            Some(path) => AdapterSource::File(PathBuf::from(path)),
            None => AdapterSource::Builtin(Builtin::Filesystem),
        };
        Ok(Self {
            runtime: shared_runtime()?,
            source,
            data: data.to_path_buf(),
            disk: PowerLoss::new(seed),
            rng: Rng::new(seed),
            world: World::new(CONVERSATIONS),
            in_flight: None,
            last_cut: None,
            totals: Totals::default(),
        })
    }

    async fn open(&self) -> anyhow::Result<(Store, Display)> {
        let mut config = StoreConfig::new("power-loss", self.source.clone(), &self.data)
            .with_grants(Grants::of(&[Capability::Filesystem]))
            .with_limits(Limits { instances: 1, ..Limits::default() });
        config.power_loss = Some(self.disk.clone());
        let store = self.runtime.open_store(config).await.context("the store does not open after the cut")?;
        let display =
            Display::persistent(store.clone(), DisplayOptions { event_capacity: 16, ..DisplayOptions::default() });
        Ok((store, display))
    }

    /// Every conversation reads back as acknowledged (or as the operation in
    /// flight left it); the world then records which of the two it was.
    async fn verify(&mut self, store: &Store, display: &Display) -> anyhow::Result<()> {
        let in_flight = self.in_flight.take();
        for (id, want) in self.world.convs.clone() {
            let got =
                observe(store, display, &id).await.with_context(|| format!("conversation {id} does not read back"))?;
            if got == want {
                continue;
            }
            match &in_flight {
                Some(f) if f.id == id && got == f.after => {
                    self.totals.in_flight_took_effect += 1;
                    self.world.convs.insert(id, got);
                }
                _ => {
                    let also = match &in_flight {
                        Some(f) if f.id == id => {
                            format!(
                                " (nor as the interrupted {:?} would leave it: {})",
                                kind(&f.op),
                                diff(&f.after, &got)
                            )
                        }
                        _ => String::new(),
                    };
                    bail!("conversation {id} does not hold what was acknowledged: {}{also}", diff(&want, &got));
                }
            }
        }
        Ok(())
    }

    /// One round: reopen, verify, write, crash somewhere in a few operations, cut.
    async fn round(&mut self) -> anyhow::Result<()> {
        let t0 = Instant::now();
        let (store, display) = self.open().await?;
        let t1 = Instant::now();
        self.verify(&store, &display).await?;
        let t2 = Instant::now();
        let (id, op) = self.world.next_write(&mut self.rng);
        run(&store, &display, &self.world, &id, &op)
            .await
            .with_context(|| format!("the store refuses the first write after a cut ({:?} to {id})", kind(&op)))?;
        self.world.apply(&id, &op);
        self.totals.acknowledged += 1;
        self.disk.set_metadata(if self.rng.below(2) == 0 { Metadata::Strict } else { Metadata::Any });
        // Half the rounds crash at a sync, where everything written since the
        // previous one is in flight (what gets lost or torn).
        if self.rng.below(2) == 0 {
            self.disk.crash_after(self.rng.below(SPAN));
        } else {
            self.disk.crash_after_syncs(self.rng.below(SYNC_SPAN));
        }
        for _ in 0..OPS {
            let (id, op) = self.world.next_op(&mut self.rng);
            match run(&store, &display, &self.world, &id, &op).await {
                Ok(()) => {
                    self.world.apply(&id, &op);
                    self.totals.acknowledged += 1;
                }
                Err(_) if self.disk.crashed() => {
                    let after = self.world.after(&id, &op);
                    self.in_flight = Some(InFlight { id, op, after });
                    break;
                }
                Err(e) => bail!("{:?} on {id} failed without a power cut: {e}", kind(&op)),
            }
        }
        self.disk.disarm();
        let t3 = Instant::now();
        store.close().await;
        drop((store, display));
        let t35 = Instant::now();
        let report = self.disk.cut()?;
        let t4 = Instant::now();
        PROFILE.with(|p| p.borrow_mut()[5] += (t4 - t35).as_secs_f64());
        PROFILE.with(|p| {
            let mut p = p.borrow_mut();
            p[0] += (t1 - t0).as_secs_f64();
            p[1] += (t2 - t1).as_secs_f64();
            p[2] += (t3 - t2).as_secs_f64();
            p[3] += (t4 - t3).as_secs_f64();
            p[4] += self.world.convs.values().flatten().map(|c| c.messages.len()).sum::<usize>() as f64;
        });
        let t = &mut self.totals;
        if report.crashed {
            t.crashes += 1
        } else {
            t.cuts_between_calls += 1
        }
        t.files_torn += u64::from(report.files_torn);
        t.files_lost += u64::from(report.files_lost);
        t.dirs_reverted += u64::from(report.dirs_reverted);
        t.dirs_rolled_forward += u64::from(report.dirs_rolled_forward);
        self.last_cut = Some(report);
        Ok(())
    }
}

thread_local! { static PROFILE: std::cell::RefCell<[f64; 6]> = const { std::cell::RefCell::new([0.0; 6]) }; }
fn kind(op: &Op) -> &'static str {
    match op {
        Op::Open => "open",
        Op::Append(_) => "append",
        Op::Replace(_) => "replace",
        Op::Truncate(_) => "truncate",
        Op::Delete => "delete",
        Op::Insert(_) => "display insert",
        Op::Update(..) => "display update",
    }
}

// A current-thread runtime: adapter calls go to the blocking pool, never inline on a worker.
#[tokio::test]
async fn filesystem_adapter_keeps_every_acknowledged_write_through_power_cuts() -> anyhow::Result<()> {
    let seed = env_u64("STOWAGE_POWER_LOSS_SEED")?.unwrap_or_else(random_seed);
    let cuts = env_u64("STOWAGE_POWER_LOSS_CUTS")?.unwrap_or(2_000);
    eprintln!("power loss: seed {seed}, {cuts} cuts (replay with STOWAGE_POWER_LOSS_SEED={seed})");
    let dir = tempfile::tempdir()?;
    let mut run = Run::new(seed, &dir.path().join("data"))?;
    let started = Instant::now();
    for cut in 0..cuts {
        if let Err(e) = run.round().await {
            let last = run.last_cut.map(|r| r.to_string()).unwrap_or_else(|| "none yet".into());
            bail!("power loss, seed {seed}, round {cut} (previous cut: {last}): {e:#}");
        }
    }
    let (store, display) = run.open().await?;
    run.verify(&store, &display).await.with_context(|| format!("seed {seed}, after the last cut"))?;
    store.close().await;
    PROFILE.with(|p| {
        eprintln!(
            "PROFILE open {:.2} verify {:.2} ops {:.2} cut {:.2} avg msgs {:.1} disk.cut {:.2}",
            p.borrow()[0],
            p.borrow()[1],
            p.borrow()[2],
            p.borrow()[3],
            p.borrow()[4] / cuts as f64,
            p.borrow()[5]
        )
    });
    let t = &run.totals;
    eprintln!("power loss: {cuts} cuts in {:.1?}: {t:?}", started.elapsed());
    // Not vacuous: most cuts crashed inside an operation, and the disk lost and tore data.
    assert!(t.crashes * 2 > cuts, "only {} of {cuts} cuts crashed inside an operation", t.crashes);
    if cuts >= 100 {
        assert!(t.files_torn > 0 && t.files_lost > 0 && t.dirs_reverted > 0, "the cuts never lost anything: {t:?}");
    }
    Ok(())
}
