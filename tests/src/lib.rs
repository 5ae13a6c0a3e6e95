#![doc = include_str!("../README.md")]

pub mod conformance;
pub mod sandbox;
