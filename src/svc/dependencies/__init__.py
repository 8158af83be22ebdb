"""A project's Python packages: declared in svc.toml's `[dependencies]`, installed by
`svcc install` into the project's own folder (`.svc/python`, never a global site-packages),
pinned in `svc.lock`, checked before a program is compiled or run, and bundled by `svcc build`.

    environment.py  where a project's packages live (`packages_folder`, `python_path`)
"""
