"""A project's Python packages: declared in svc.toml's `[dependencies]`, installed by
`svcc install` into the project's own folder (`.svc/python`, never a global site-packages),
pinned in `svc.lock`, checked before a program is compiled or run, and bundled by `svcc build`.

    manifest.py     svc.toml's `[dependencies]` as data: names, ranges, folders, the digest
    lock.py         svc.lock: read and write the exact versions installed
    install.py      `svcc install`: pip into a staging folder that replaces .svc/python whole
    verify.py       whether the installed packages are the locked ones (before every command)
    environment.py  where a project's packages live (`packages_folder`, `python_path`), and
                    which distributions a packages folder holds
"""
