use stowage::*;

#[tokio::test(flavor = "multi_thread")]
async fn smoke() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let runtime = Runtime::new(RuntimeConfig {
        cache_dir: Some(dir.path().join("cache")),
        ..Default::default()
    })?;
    for b in Builtin::ALL {
        let t = std::time::Instant::now();
        let r = runtime
            .inspect(&AdapterSource::Builtin(b), b.grants())
            .await?;
        println!("{b:?} loaded in {:?}: {:?}", t.elapsed(), r.imports);
        let store = runtime
            .open_store(StoreConfig::builtin(b, dir.path().join(b.name())))
            .await?;
        let scope = Scope::new("t", "u");
        store
            .open(&scope, "c1", ConversationMeta::default())
            .await?;
        let out = store
            .append(
                &scope,
                "c1",
                vec![
                    NewMessage::text(Role::User, "hi"),
                    NewMessage::text(Role::Assistant, "yo"),
                ],
                None,
            )
            .await?;
        println!("{out:?}");
        let page = store.load(&scope, "c1", LoadRequest::latest(10)).await?;
        println!("{page:?}");
    }
    Ok(())
}
