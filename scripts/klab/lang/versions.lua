-- klab.lang.versions: the versions of the language front ends' packages that
-- klab is tested with, pinned in one place. tools/deps.sh reads this file
-- (one `name = "version",` per line) to install them; klab.lang finds them
-- in the cache folder by these versions.
return {
  triton = "3.6.0",
  cutlass = "4.2.0.0",
}
