//! Choosing a device: [`auto`] picks the fastest device for a piece of work from the cost model (and a trial when
//! the model cannot tell), [`group`] predicts a set of devices sharing the work and [`group_run`] measures one with
//! the shares it chooses, [`evaluation`] and [`set_evaluation`] measure how often
//! those choices were right (of a device, and of a set of devices), and [`catalog`] is the run-time
//! list of workloads, built-in and a program's own, that the choice and the command line read. It stands on
//! [`crate::model`] and everything below it.

pub mod auto;
pub mod catalog;
pub mod evaluation;
pub mod group;
pub mod group_run;
pub mod set_evaluation;
