from kuuki.cli import main

raise SystemExit(main())
