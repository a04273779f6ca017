mod builder;
mod cases;
mod cli;
mod liveness;
mod replay;
mod unreadable;
mod watch;
