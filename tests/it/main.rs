mod builder;
mod cases;
mod cli;
mod replay;
mod liveness;
mod watch;
