//! One process per device: a process is one rank of a world of processes that run one computation together, each on
//! its own device, as `torchrun` starts them: `GPUWORTHY_RANK` (0 to world size − 1), `GPUWORTHY_WORLD_SIZE` and
//! `GPUWORTHY_RENDEZVOUS`, the place where the ranks meet.
//!
//! The rendezvous is a directory every rank can reach (a local one for the processes of one host, a shared file
//! system across hosts): a rank publishes a value under a key by writing a file and renaming it into place, so that a
//! reader never sees half of it, and gathers a key by waiting for every rank's file, up to a timeout that names the
//! ranks that never came. It is what a group of processes needs and no more: each rank's part of the output, and,
//! for GPU-to-GPU traffic, the identifier a collective library's ranks must share before they can talk.
//!
//! A directory holds one run: a rank that finds its own part already there refuses to run (a previous run's parts
//! would otherwise be joined as this run's), and rank 0 removes the parts once it has joined them.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use gpuworthy_core::{Error, Result};

/// The variable that gives this process's rank.
pub const RANK_VAR: &str = "GPUWORTHY_RANK";
/// The variable that gives the number of processes.
pub const WORLD_SIZE_VAR: &str = "GPUWORTHY_WORLD_SIZE";
/// The variable that gives the rendezvous directory.
pub const RENDEZVOUS_VAR: &str = "GPUWORTHY_RENDEZVOUS";
/// The variable that gives how long a rank waits for the others, in seconds (120 unless set).
pub const TIMEOUT_VAR: &str = "GPUWORTHY_RENDEZVOUS_TIMEOUT";

/// The most processes a world may have: far beyond any host, small enough that a mistyped size is refused.
pub const MAX_WORLD_SIZE: usize = 4096;

/// This process's place in a world of processes, and where they meet.
#[derive(Debug, Clone, PartialEq)]
pub struct Rank {
    /// This process's rank, from 0.
    pub rank: usize,
    /// The number of processes.
    pub world: usize,
    /// The rendezvous directory.
    pub dir: PathBuf,
    /// How long [`Rank::gather`] waits for the other ranks.
    pub timeout: Duration,
}

impl Rank {
    /// The rank the environment gives: `None` where none of the variables is set; an error naming the variable
    /// where one is missing, not a number, or out of range.
    pub fn from_env() -> Result<Option<Rank>> {
        Rank::from_vars(|name| std::env::var(name).ok())
    }

    /// [`Rank::from_env`] reading the variables through `var`.
    pub fn from_vars(var: impl Fn(&str) -> Option<String>) -> Result<Option<Rank>> {
        let (rank, world, dir) = (var(RANK_VAR), var(WORLD_SIZE_VAR), var(RENDEZVOUS_VAR));
        if rank.is_none() && world.is_none() && dir.is_none() {
            return Ok(None);
        }
        let given = |name: &str, value: Option<String>| {
            value.filter(|v| !v.trim().is_empty()).ok_or_else(|| {
                Error::invalid(format!(
                    "{name} is not set, but other GPUWORTHY_ rank variables are: a rank needs {RANK_VAR}, \
                     {WORLD_SIZE_VAR} and {RENDEZVOUS_VAR}"
                ))
            })
        };
        let number = |name: &str, text: String| {
            text.trim().parse::<usize>().map_err(|_| Error::invalid(format!("{name}={text:?} is not a whole number")))
        };
        let world = number(WORLD_SIZE_VAR, given(WORLD_SIZE_VAR, world)?)?;
        let rank = number(RANK_VAR, given(RANK_VAR, rank)?)?;
        if world == 0 || world > MAX_WORLD_SIZE {
            return Err(Error::invalid(format!("{WORLD_SIZE_VAR}={world}: a world has 1 to {MAX_WORLD_SIZE} ranks")));
        }
        if rank >= world {
            return Err(Error::invalid(format!("{RANK_VAR}={rank} is not below {WORLD_SIZE_VAR}={world}")));
        }
        let dir = PathBuf::from(given(RENDEZVOUS_VAR, dir)?);
        let timeout = match var(TIMEOUT_VAR) {
            None => Duration::from_secs(120),
            Some(text) => match text.trim().parse::<f64>() {
                Ok(s) if s > 0.0 && s.is_finite() && s <= 86_400.0 => Duration::from_secs_f64(s),
                _ => {
                    return Err(Error::invalid(format!(
                        "{TIMEOUT_VAR}={text:?} is not a number of seconds above 0 and at most a day"
                    )));
                }
            },
        };
        Ok(Some(Rank { rank, world, dir, timeout }))
    }

    /// The file of `rank`'s value under `key`.
    fn file(&self, key: &str, rank: usize) -> PathBuf {
        self.dir.join(format!("{key}.rank{rank}"))
    }

    /// Publishes `bytes` under `key` for the other ranks: written beside its place and renamed into it, so that no
    /// rank reads it half written. A value this rank already published under `key` (a previous run's) is refused.
    pub fn publish(&self, key: &str, bytes: &[u8]) -> Result<()> {
        check_key(key)?;
        let io =
            |what: &str, e: std::io::Error| Error::invalid(format!("rendezvous {}: {what}: {e}", self.dir.display()));
        std::fs::create_dir_all(&self.dir).map_err(|e| io("creating it", e))?;
        let place = self.file(key, self.rank);
        if place.exists() {
            return Err(Error::invalid(format!(
                "rendezvous {}: rank {}'s `{key}` is already there, from an earlier run: give each run a directory \
                 of its own",
                self.dir.display(),
                self.rank
            )));
        }
        let partial = self.dir.join(format!(".{key}.rank{}.partial", self.rank));
        std::fs::write(&partial, bytes).map_err(|e| io("writing a part", e))?;
        std::fs::rename(&partial, &place).map_err(|e| io("putting a part in place", e))
    }

    /// Every rank's value under `key`, in rank order, waiting for the ranks that have not published it yet, up to
    /// [`Rank::timeout`]; past it, an error naming the ranks that never did.
    pub fn gather(&self, key: &str) -> Result<Vec<Vec<u8>>> {
        check_key(key)?;
        let start = Instant::now();
        loop {
            let missing: Vec<usize> = (0..self.world).filter(|&r| !self.file(key, r).exists()).collect();
            if missing.is_empty() {
                return (0..self.world)
                    .map(|r| {
                        std::fs::read(self.file(key, r)).map_err(|e| {
                            Error::invalid(format!(
                                "rendezvous {}: reading rank {r}'s `{key}`: {e}",
                                self.dir.display()
                            ))
                        })
                    })
                    .collect();
            }
            if start.elapsed() >= self.timeout {
                return Err(Error::invalid(format!(
                    "rendezvous {}: ranks {missing:?} of {} never published `{key}` within {:.0} s ({TIMEOUT_VAR})",
                    self.dir.display(),
                    self.world,
                    self.timeout.as_secs_f64()
                )));
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// Removes every rank's value under `key` (rank 0, once it has joined them), so that the directory can hold a
    /// later run.
    pub fn clear(&self, key: &str) -> Result<()> {
        check_key(key)?;
        for r in 0..self.world {
            match std::fs::remove_file(self.file(key, r)) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                    return Err(Error::invalid(format!("rendezvous {}: removing a part: {e}", self.dir.display())));
                }
                _ => {}
            }
        }
        Ok(())
    }
}

/// A key is a file name's stem: letters, digits, `-`, `_` and `.`, not starting with `.`.
fn check_key(key: &str) -> Result<()> {
    let ok =
        !key.is_empty() && !key.starts_with('.') && key.chars().all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c));
    if ok { Ok(()) } else { Err(Error::invalid(format!("`{key}` is not a rendezvous key"))) }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars<'a>(pairs: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |name| pairs.iter().find(|(n, _)| *n == name).map(|(_, v)| (*v).to_owned())
    }

    #[test]
    fn no_variables_is_no_rank_and_each_mistake_names_its_variable() {
        assert_eq!(Rank::from_vars(vars(&[])).unwrap(), None);
        let rank = Rank::from_vars(vars(&[(RANK_VAR, "1"), (WORLD_SIZE_VAR, "2"), (RENDEZVOUS_VAR, "/tmp/r")]));
        assert_eq!(rank.unwrap().unwrap().world, 2);
        for (pairs, needle) in [
            (&[(RANK_VAR, "0")][..], WORLD_SIZE_VAR),
            (&[(RANK_VAR, "0"), (WORLD_SIZE_VAR, "2")], RENDEZVOUS_VAR),
            (&[(RANK_VAR, "two"), (WORLD_SIZE_VAR, "2"), (RENDEZVOUS_VAR, "d")], "not a whole number"),
            (&[(RANK_VAR, "2"), (WORLD_SIZE_VAR, "2"), (RENDEZVOUS_VAR, "d")], "is not below"),
            (&[(RANK_VAR, "0"), (WORLD_SIZE_VAR, "0"), (RENDEZVOUS_VAR, "d")], "1 to 4096"),
            (&[(RANK_VAR, "0"), (WORLD_SIZE_VAR, "1"), (RENDEZVOUS_VAR, "d"), (TIMEOUT_VAR, "-1")], TIMEOUT_VAR),
            (&[(RANK_VAR, "0"), (WORLD_SIZE_VAR, "1"), (RENDEZVOUS_VAR, "")], RENDEZVOUS_VAR),
        ] {
            let err = Rank::from_vars(vars(pairs)).unwrap_err().to_string();
            assert!(err.contains(needle), "{pairs:?}: {err}");
        }
    }

    #[test]
    fn ranks_publish_and_gather_in_rank_order_and_a_missing_rank_is_named() {
        let dir = std::env::temp_dir().join(format!("gpuworthy-rank-test-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let rank = |r: usize| Rank { rank: r, world: 3, dir: dir.clone(), timeout: Duration::from_millis(200) };
        // The ranks publish from threads of their own, in reverse order, while rank 0 already waits.
        std::thread::scope(|scope| {
            let waiting = scope.spawn(|| rank(0).gather("part"));
            for r in (0..3).rev() {
                rank(r).publish("part", &[r as u8; 3]).unwrap();
            }
            assert_eq!(waiting.join().unwrap().unwrap(), vec![vec![0; 3], vec![1; 3], vec![2; 3]]);
        });
        let again = rank(1).publish("part", b"x").unwrap_err().to_string();
        assert!(again.contains("earlier run"), "{again}");
        rank(0).clear("part").unwrap();
        rank(2).publish("late", b"y").unwrap();
        let missing = rank(0).gather("late").unwrap_err().to_string();
        assert!(missing.contains("ranks [0, 1] of 3 never published"), "{missing}");
        assert!(rank(0).publish("../escape", b"z").is_err());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
