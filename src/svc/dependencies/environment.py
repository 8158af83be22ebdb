"""Where a project's installed Python packages live, and the import path that finds them.

The folder is `<project>/.svc/python`, a `pip install --target` folder that `svcc install`
fills; nothing else writes it. The compiler's check of `@python` declarations and the runner
both put it at the front of the import path, so a declaration finds the project's own packages
first.
"""

from __future__ import annotations

import os

#: The project-relative folder of the installed packages.
PACKAGES_FOLDER = os.path.join(".svc", "python")


def packages_folder(project_dir: str) -> str:
    """The folder `svcc install` fills for the project in `project_dir`."""
    return os.path.join(project_dir, PACKAGES_FOLDER)


def python_path(project_dir: str | None) -> tuple[str, ...]:
    """The folders to import a project's packages from (none when it has none installed, or
    for a lone `.svc` file)."""
    if project_dir is None:
        return ()
    folder = packages_folder(project_dir)
    return (folder,) if os.path.isdir(folder) else ()


def installed(folder: str) -> dict[str, str]:
    """The distributions installed in a packages folder: normalized name -> version (from
    their `.dist-info` metadata, as pip records them; {} for a missing folder)."""
    from importlib.metadata import distributions

    from svc.dependencies.manifest import normalized

    if not os.path.isdir(folder):
        return {}
    return {normalized(d.metadata["Name"]): d.version for d in distributions(path=[folder])
            if d.metadata["Name"]}
